"""The adapter template: one ``call`` for every framework, small hooks per framework.

A call goes the same way for every framework whose kernels write into the
tensors passed in (PyTorch, PaddlePaddle)::

    bind (check arguments, describe tensors)
      -> the backend interprets?  launch through its interpreter
      -> else: the tensors must be on a GPU; prepare, then launch on the
         framework's stream with the tensors' GPU current

:class:`Adapter` implements that in :meth:`Adapter.call`; a framework
subclass names its tensor types and supplies the hooks:
:meth:`~Adapter.describe` (required), and where the defaults do not fit,
:meth:`~Adapter.pointers` (what the backend gets for each tensor on the GPU),
:meth:`~Adapter.placeholder` (a stand-in for a parameter a call leaves unused),
:meth:`~Adapter.launch_stream`, :meth:`~Adapter.device_guard`,
:meth:`~Adapter.launch_interpreted` (handing tensors to the interpreter) and
:meth:`~Adapter.host_reads` (how the backend's per-call fast path reads the
framework's tensors).  Functional frameworks (JAX) override
:meth:`~Adapter.call` for their own convention and reuse :meth:`~Adapter.bind`
and :func:`require_gpu`.

Whether the backend interprets is asked of the generated kernel
(``kernel.interpreting``), so the core never imports the backend.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from ninetoothed.errors import AdapterNotFoundError, LaunchError
from ninetoothed.runtime.binding import BoundCall, bind_call
from ninetoothed.runtime.hookspecs import (
    AutodiffBinding,
    FastPath,
    GeneratedKernel,
    HostReads,
    Miss,
    TensorInfo,
)

__all__ = ["Adapter", "cuda_index", "require_gpu"]

_PYTHON_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def require_gpu(kernel_name: str, device: str, noun: str, hint: str) -> None:
    """Raise unless ``device`` is a CUDA GPU: kernels run there, or in the interpreter.

    ``noun`` is what the framework calls its tensors (``"tensors"``,
    ``"arrays"``); ``hint`` says how to put them on a GPU.
    """
    if not device.startswith("cuda"):
        raise LaunchError(
            f"{kernel_name}: the {noun} are on {device}, but kernels run on a GPU; {hint}, or "
            "set TRITON_INTERPRET=1 to run through Triton's CPU interpreter"
        )


@functools.cache
def cuda_index(device: str) -> int:
    """The GPU's index in a device name: ``1`` for ``"cuda:1"`` (0 for ``"cuda"``).

    Memoised: adapters ask on every launch.
    """
    return int(device.partition(":")[2] or 0)


class Adapter:
    """Template of a framework adapter (a ``FrameworkAdapter``); see the module docstring."""

    name: ClassVar[str]
    """The framework's import name: ``"torch"``, ``"paddle"``, ``"jax"``."""

    distribution: ClassVar[str]
    """The distribution providing the adapter, e.g. ``"nt-torch"``."""

    tensor_types: ClassVar[tuple[type, ...]]
    """The framework's tensor types (subclasses count too)."""

    gpu_hint: ClassVar[str] = "move them to the GPU"
    """How to put this framework's tensors on a GPU, for the error of a CPU launch."""

    writes_in_place: ClassVar[bool] = True
    """Whether kernels write into the tensors passed in (PyTorch, PaddlePaddle); a
    functional framework's arrays are immutable (JAX), so C libraries, which write
    through the pointers they get, refuse them."""

    autodiff: ClassVar[AutodiffBinding | None] = None
    """The framework's binding of ``functional`` and ``differentiable`` (a module with
    ``run``, ``concat`` and ``differentiate``), or None (the default): the framework's
    tensors then take no part in them."""

    guards_fast_path: ClassVar[bool] = False
    """Whether the kernel's fast path (its ``__call__`` after a first GPU call) calls
    the plugins' call guard first, as the general path does (see
    :data:`ninetoothed.runtime.plugins.call_guard`): Paddle's, whose translator would
    otherwise simulate the fast path's misses; PyTorch's stays without it."""

    # -- hooks ---------------------------------------------------------------
    def recognizes(self, obj: object) -> bool:
        """Whether ``obj`` is a tensor of this framework (one of :attr:`tensor_types`)."""
        return isinstance(obj, self.tensor_types)

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, strides (elements), dtype name, device and data pointer of ``obj``."""
        raise NotImplementedError

    def placeholder(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        """A new tensor of ``shape``, canonical ``dtype`` and ``device``, handed to the
        kernel for a parameter the call leaves unused (see :mod:`ninetoothed.spec._guards`);
        None (the default) where the framework makes none: every parameter is checked."""
        return None

    def pointers(self, bound: BoundCall) -> list[Any]:
        """What the backend gets for each tensor's data on the GPU (default: the tensors)."""
        return bound.tensor_arguments

    def launch_stream(self, device: str) -> int:
        """The stream handle to launch on; 0 (the default) lets the backend choose."""
        return 0

    def device_guard(self, device: str) -> AbstractContextManager[None] | None:
        """A context making ``device`` current for the launch, or None if it already is."""
        return None

    def aot_reads(self) -> tuple[Callable[[Any], Any], Callable[[Any], int]]:
        """What a C library's fast path reads of a tensor (:mod:`ninetoothed._aot.fast`):
        a hashable key of the facts a call's checks depend on (shape, strides, dtype,
        device), and the data pointer; default: :meth:`describe`'s."""
        return (lambda obj: tuple(self.describe(obj)[:4])), (
            lambda obj: self.describe(obj).data_ptr
        )

    def current_stream(self, device: str) -> int:
        """The framework's current stream on ``device`` as a raw handle, for launchers
        that take one explicitly (C libraries); default: :meth:`launch_stream`."""
        return self.launch_stream(device)

    def launch_interpreted(self, kernel: GeneratedKernel, bound: BoundCall) -> None:
        """Launch through the backend's interpreter (default: hand the tensors as they are)."""
        kernel.launch(kernel.prepare(bound.tensors, bound.tensor_arguments, bound.scalars), 0)

    def tracing(self) -> bool:
        """Whether a compiler traces the current call (default: never)."""
        return False

    def host_reads(self) -> HostReads | None:
        """How the backend's fast path reads this framework's tensors and asks its
        runtime for devices and streams; None (the default): no fast path."""
        return None

    def fast_path(self, kernel: GeneratedKernel, miss: Miss) -> FastPath | None:
        """The kernel's per-call fast path for this framework, or None.

        The default asks the kernel (:meth:`GeneratedKernel.fast_launcher`) with
        :meth:`host_reads`, unless the backend interprets.  A :class:`FastPath`'s ``call``
        launches, sending calls it has no plan for to ``miss(args, kwargs)``, and
        its ``launch_bound(bound, args, kwargs)`` launches a validated call and
        remembers its plan.
        """
        if kernel.interpreting:
            return None
        reads = self.host_reads()
        return None if reads is None else kernel.fast_launcher(reads, miss)

    def launcher(self, kernel: GeneratedKernel, miss: Miss | None = None) -> FastPath | None:
        """This adapter's fast path for ``kernel`` (made once), or None."""
        launchers: weakref.WeakKeyDictionary[GeneratedKernel, FastPath | None] = (
            self.__dict__.setdefault("_launchers", weakref.WeakKeyDictionary())
        )
        launcher = launchers.get(kernel)
        if launcher is None and kernel not in launchers:
            launcher = self.fast_path(kernel, miss or self._missed(kernel))
            launchers[kernel] = launcher
        elif launcher is not None and miss is not None:
            launcher.miss = miss
        return launcher

    def _missed(self, kernel: GeneratedKernel) -> Callable[..., Any]:
        """The miss path of a fast path made without a caller's dispatch: this adapter's call."""
        reference = weakref.ref(kernel)

        def miss(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            target = reference()
            assert target is not None
            return self.call(target, args, kwargs)

        return miss

    def bind_jagged(
        self,
        kernel: GeneratedKernel,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        describe: Callable[[Any], TensorInfo] | None = None,
    ) -> BoundCall:
        """:meth:`bind` for a kernel with jagged parameters.

        (Jagged tensors' semantics: :mod:`ninetoothed.arrangement._jagged`.)

        The default refuses, naming the first jagged parameter: only frameworks
        with nested tensors (PyTorch) override it.  An override describes a
        jagged argument with its longest entry's length as the jagged size and
        stride 0 along the batch, and hands the backend ``(values, offsets,
        extent)`` for it, where ``extent`` is one past the largest element offset
        of the values.
        """
        index = kernel.spec.jagged_parameters[0]
        parameter = kernel.spec.tensor_parameters[index]
        jagged_dim = parameter.source.jagged_dim
        assert jagged_dim is not None
        raise LaunchError(
            _no_nested_tensors(kernel.spec.label, parameter.name, jagged_dim, self.name)
        )

    # -- the template ----------------------------------------------------------
    def bind(
        self,
        kernel: GeneratedKernel,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        describe: Callable[[Any], TensorInfo] | None = None,
    ) -> BoundCall:
        """Check the call against ``kernel.spec`` and describe its tensors.

        ``describe`` replaces :meth:`describe` for this call (JAX describes
        tracers by the call's device).  Kernels with jagged parameters go
        through :meth:`bind_jagged`.
        """
        if kernel.spec.jagged_parameters:
            return self.bind_jagged(kernel, args, kwargs, describe)
        return bind_call(
            kernel.spec,
            args,
            kwargs,
            framework=self.name,
            recognizes=self.recognizes,
            describe=describe or self.describe,
            placeholder=self.placeholder,
        )

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Validate and launch; results land in the tensors passed in (returns None)."""
        try:
            bound = self.bind(kernel, args, kwargs)
        except LaunchError:
            # Name both frameworks when a foreign tensor is among the arguments
            # (their classes may share a name: torch.Tensor, paddle.Tensor).
            # Done only on failure, so calls that bind pay nothing.
            self._raise_if_mixed(kernel.spec.label, args)
            raise
        if kernel.interpreting:
            self.launch_interpreted(kernel, bound)
            return None
        device = bound.device
        if not device.startswith("cuda"):
            require_gpu(kernel.spec.label, device, "tensors", self.gpu_hint)
        launcher = self.launcher(kernel)
        if launcher is not None:
            launcher.launch_bound(bound, args, kwargs)
            return None
        plan = kernel.prepare(bound.tensors, self.pointers(bound), bound.scalars)
        stream = self.launch_stream(device)
        guard = self.device_guard(device)
        if guard is None:
            kernel.launch(plan, stream)
            return None
        with guard:
            kernel.launch(plan, stream)
        return None

    def _raise_if_mixed(self, kernel_name: str, args: tuple[Any, ...]) -> None:
        """Raise a :class:`LaunchError` naming both frameworks if ``args`` has a foreign tensor."""
        from ninetoothed.runtime import plugins

        for position, argument in enumerate(args):
            if isinstance(argument, _PYTHON_SCALARS) or self.recognizes(argument):
                continue
            try:
                adapter = plugins.adapter_for(argument)
            except AdapterNotFoundError:  # not any framework's tensor: bind's message stands
                continue
            if adapter.name != self.name:
                cls = type(argument)
                raise LaunchError(
                    f"{kernel_name}: cannot mix tensors of two frameworks in one kernel call: the "
                    f"call has {self.name} tensors, but argument {position} is a {adapter.name} "
                    f"tensor ({cls.__module__}.{cls.__qualname__}); convert it to {self.name} "
                    f"(e.g. {self.name}.from_dlpack) or call the kernel with one framework's "
                    "tensors"
                )


def _no_nested_tensors(kernel_name: str, parameter: str, jagged_dim: int, framework: str) -> str:
    """The error message for a jagged parameter called from a framework without nested tensors."""
    return (
        f"{kernel_name}: parameter {parameter!r} is jagged (Tensor(jagged_dim={jagged_dim})), "
        f"which takes a torch nested tensor (layout=torch.jagged); {framework} has no nested "
        "tensors, so kernels with jagged parameters run on PyTorch only"
    )
