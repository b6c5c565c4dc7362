"""The JAX framework adapter: NineToothed kernels as functions of JAX arrays.

JAX arrays are immutable, so a JAX kernel is functional.  It is called like a
PyTorch kernel, with one argument per parameter, output parameters included:
an output is given either as an array (its shape and dtype, and its initial
contents, which the kernel reads if it both reads and writes the parameter and
which stay wherever it writes nothing) or as a ``jax.ShapeDtypeStruct`` (a
fresh buffer: only for parameters the kernel does not read).  The call returns
the new arrays of the output parameters (``kernel.outputs``, the parameters
the application assigns to): one array for one output, else a tuple in
parameter order.  Calls compose with ``jax.jit``: arguments may be tracers.

:class:`JaxAdapter` overrides the template's ``call``
(:class:`ninetoothed.runtime.adapter.Adapter`) for that convention and reuses its
binding and GPU check.  How a call is launched:

* **Triton's interpreter** (``TRITON_INTERPRET=1``, any device): inside
  ``jax.pure_callback`` (:func:`nt_jax.callbacks.call_interpreted`).
* **GPU, through jax-triton** (``pip install "nt-jax[gpu]"``, the default
  where it imports): an XLA custom call (:mod:`nt_jax.triton_call`).
* **GPU without jax-triton**: from ``jax.experimental.buffer_callback``
  (:func:`nt_jax.callbacks.call_buffer_callback`), chosen only when jax-triton
  does not import, or when ``NINETOOTHED_JAX_LAUNCHER=callback`` asks for it
  (``=jax-triton`` forces jax-triton, failing clearly when it is missing).
  Under the interpreter, ``=callback`` runs this launcher too, which is how it
  is tested without a GPU.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

import jax

from ninetoothed.arrangement.dtype import name_of
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.adapter import Adapter, require_gpu
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import AutodiffBinding, GeneratedKernel, TensorInfo
from nt_jax import autodiff, callbacks, triton_call
from nt_jax._sharding import refuse_partitioned
from nt_jax.eager import EagerCalls
from nt_jax.roles import Roles, roles
from nt_triton import TritonKernel


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a contiguous row-major array of ``shape``.

    JAX arrays have no user-visible layout; XLA hands kernels (and callbacks)
    dense row-major buffers.
    """
    strides = []
    step = 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


class JaxAdapter(Adapter):
    """Adapter for ``jax.Array`` (a ``FrameworkAdapter``); see the module docstring."""

    name = "jax"
    distribution = "nt-jax"
    tensor_types = (jax.Array, jax.ShapeDtypeStruct)
    """JAX arrays, tracers of them, and ``ShapeDtypeStruct`` (an output's shape and dtype)."""
    gpu_hint = "put them on a GPU"
    writes_in_place = False
    autodiff: ClassVar[AutodiffBinding | None] = autodiff

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, row-major strides, dtype name, device and data pointer.

        Tracers and ``ShapeDtypeStruct`` have no buffer: their device is JAX's
        default device and their data pointer 0; so is the pointer of an array
        whose buffer cannot be read (deleted, or sharded over devices).
        """
        return _describe(obj, None, with_pointer=True)

    def placeholder(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        """A zero-filled array handed to the kernel for a parameter the call leaves unused
        (on ``device``; a constant of the computation under ``jax.jit``)."""
        placed = next((d for d in jax.devices() if _device_name(d) == device), None)
        return jax.numpy.zeros(shape, dtype=dtype, device=placed)

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Validate, launch, and return the output parameters' new arrays.

        An eager call (no tracer among the arguments) runs a ``jax.jit`` of the
        launch made once per pattern of argument types, JAX's dispatch keying
        the compiled launch by shapes, dtypes, placement and the other
        arguments' values (:mod:`nt_jax.eager`): a repeated call is one dict
        lookup and one jitted call, and the launch is traced (and validated)
        once per specialisation.
        """
        eager = eager_calls(self, kernel)
        jitted = eager.by_types.get(tuple(map(type, args)))
        known = not kwargs or eager.keywords.issuperset(kwargs)
        # A kernel's error inside an (interpreter's or buffer) callback is raised as
        # itself, not as XLA's "INTERNAL: CpuCallback error".
        if jitted is not None and known:
            return callbacks.raising_kernel_errors(lambda: jitted(*args, **kwargs))
        autodiff.refuse_differentiation(kernel.spec.label, args)
        if not known or any(isinstance(a, jax.core.Tracer) for a in args):
            return self._call(kernel, args, kwargs)
        return callbacks.raising_kernel_errors(lambda: eager.first(args, kwargs))

    def fast_path(self, kernel: GeneratedKernel, miss: Callable[..., Any]) -> EagerCalls:
        """On the GPU, a kernel's calls go straight to its jitted eager launches."""
        eager = eager_calls(self, kernel)
        eager.miss = miss
        return eager

    def _call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Validate, launch (or, under ``jax.jit``, stage the launch), return the outputs."""
        # JAX launches Triton kernels: jax-triton and the interpreter take nt-triton's.
        triton_kernel = cast(TritonKernel, kernel)
        names = [check.name for check in kernel.spec.call_checks]
        refuse_partitioned(kernel.spec.label, names, args)
        # Tracers and ShapeDtypeStructs have no device: they take the device of
        # the call's first concrete array, so they never cause a mismatch.
        fallback = next(
            (_device_name(next(iter(a.devices()))) for a in args if _is_concrete(a)), None
        )
        bound = self.bind(
            kernel, args, kwargs, lambda obj: _describe(obj, fallback, with_pointer=False)
        )
        call_roles = roles(kernel, bound)
        if kernel.interpreting:
            _check_shapes(triton_kernel, bound, call_roles)
            results = _interpreted(kernel, bound, call_roles)
        else:
            require_gpu(kernel.spec.label, bound.device, "arrays", self.gpu_hint)
            if triton_call.gpu_launcher() == "callback":
                _check_shapes(triton_kernel, bound, call_roles)
                results = callbacks.call_buffer_callback(kernel, bound, call_roles)
            else:
                results = triton_call.call_jax_triton(triton_kernel, bound, call_roles)
        if bound.unused:
            results = _unused_outputs(kernel, bound, call_roles, args, results)
        return results[0] if len(results) == 1 else tuple(results)


EAGER_ATTRIBUTE = "_nt_jax_eager_calls"
"""Where a kernel keeps its :class:`~nt_jax.eager.EagerCalls` (freed with the kernel:
the jitted launches refer back to it, so a global table would keep it alive)."""


def eager_calls(adapter: JaxAdapter, kernel: GeneratedKernel) -> EagerCalls:
    """The kernel's :class:`~nt_jax.eager.EagerCalls` (made on its first call)."""
    found: EagerCalls | None = getattr(kernel, EAGER_ATTRIBUTE, None)
    if found is None:
        reference = weakref.ref(kernel)

        def miss(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            target = reference()
            assert target is not None, "the kernel was freed"
            return adapter.call(target, args, kwargs)

        found = EagerCalls(kernel, adapter._call, miss)
        setattr(kernel, EAGER_ATTRIBUTE, found)
    return found


def _unused_outputs(
    kernel: GeneratedKernel,
    bound: BoundCall,
    call_roles: Roles,
    args: tuple[Any, ...],
    results: list[Any],
) -> list[Any]:
    """The results with each output the call left unused (the kernel wrote a stand-in)
    replaced by its argument as given: its initial contents, or zeros for a
    ``ShapeDtypeStruct``."""
    given = [a for a, check in zip(args, kernel.spec.call_checks) if not check.is_scalar]
    replaced = list(results)
    for output, index in enumerate(call_roles.outputs):
        if index in bound.unused:
            argument = given[index]
            if isinstance(argument, jax.ShapeDtypeStruct):
                argument = jax.numpy.zeros(argument.shape, argument.dtype)
            replaced[output] = argument
    return replaced


def _interpreted(kernel: GeneratedKernel, bound: BoundCall, call_roles: Roles) -> list[Any]:
    """The interpreter's launch: in a pure callback, or (when asked for) a buffer callback."""
    if triton_call.requested_launcher() == "callback":
        return callbacks.call_buffer_callback(kernel, bound, call_roles)
    return callbacks.call_interpreted(kernel, bound, call_roles)


def _check_shapes(kernel: TritonKernel, bound: BoundCall, call_roles: Roles) -> None:
    """Raise now, while tracing, if the arguments' shapes do not fit the arrangement.

    The generated host code checks that the arranged tensors' outermost shapes
    agree when it computes the grid; callbacks run it again at execution time,
    where an error would surface as an opaque runtime failure.
    """
    kernel.concrete_grid(kernel.prepare(bound.tensors, call_roles.arguments, bound.scalars))


def _describe(obj: Any, device: str | None, *, with_pointer: bool) -> TensorInfo:
    shape = tuple(int(size) for size in obj.shape)
    data_ptr = 0
    if _is_concrete(obj):
        devices = obj.devices()
        if len(devices) != 1:
            raise LaunchError(
                f"NineToothed kernels take arrays on one device; got an array sharded over "
                f"{len(devices)} devices ({obj.sharding}): call the kernel inside "
                "jax.shard_map, which gives it each device's shard, or gather the array "
                "onto one device first"
            )
        device = _device_name(next(iter(devices)))
        if with_pointer:
            try:
                data_ptr = obj.unsafe_buffer_pointer()
            except Exception:  # deleted or not addressable: no pointer to report
                data_ptr = 0
    return TensorInfo(
        shape=shape,
        strides=row_major_strides(shape),
        dtype=name_of(obj.dtype),
        device=device or _default_device(),
        data_ptr=data_ptr,
    )


def _device_name(device: Any) -> str:
    """``"cpu"`` or ``"cuda:N"`` for a ``jax.Device``."""
    if device.platform in ("gpu", "cuda", "rocm"):
        index = getattr(device, "local_hardware_id", None)
        return f"cuda:{index if index is not None else device.id}"
    platform: str = device.platform
    return platform


def _default_device() -> str:
    """Where JAX puts new arrays, as a device name."""
    return _device_name(jax.devices()[0])


def _is_concrete(obj: object) -> bool:
    """Whether ``obj`` is an array with a buffer (not a tracer or a ShapeDtypeStruct)."""
    return isinstance(obj, jax.Array) and not isinstance(obj, jax.core.Tracer)
