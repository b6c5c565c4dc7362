"""The plugin contracts of NineToothed, as pluggy hook specifications.

Two kinds of plugin exist:

* a **code-generation backend** (``nt-triton``) turns a validated
  :class:`ninetoothed.spec.kernel_spec.KernelSpec` into a :class:`GeneratedKernel`;
* a **framework adapter** (``nt-torch``, ``nt-paddle``, ``nt-jax``) recognises
  a host tensor, describes it (shape, strides, dtype, device, data pointer)
  and launches a generated kernel on it, through the kernel's surface only
  (signature, configurations, ``prepare``/``launch``, and the per-call
  :class:`FastPath` a kernel makes from the adapter's :class:`HostReads`).

Plugins are found through the ``ninetoothed`` entry-point group when their
distribution is installed, or registered by hand with
:func:`ninetoothed.runtime.plugins.register`.  The core never imports a backend or a
framework; it only calls these hooks and the members declared here.
``docs/adapters.md`` walks through writing an adapter against this contract.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import pluggy

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from ninetoothed.aot import BuildVariant, CLibrary
    from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = [
    "AheadOfTimeBuilder",
    "AutodiffBinding",
    "CodegenBackend",
    "Configuration",
    "FastPath",
    "FrameworkAdapter",
    "GeneratedKernel",
    "HostReads",
    "Miss",
    "NineToothedSpec",
    "PROJECT_NAME",
    "PreparedLaunch",
    "RankGroup",
    "SignatureParameter",
    "TensorInfo",
    "hookimpl",
    "hookspec",
]

PROJECT_NAME = "ninetoothed"
"""The pluggy project name, which is also the entry-point group plugins use."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class TensorInfo(NamedTuple):
    """What an adapter reports about one host tensor.

    ``dtype`` is a canonical name shared by every framework (see
    :mod:`ninetoothed.arrangement.dtype`): ``"float16"``, ``"bfloat16"``, ``"int8"``,
    ``"uint8"``, ``"bool"`` ….  ``strides`` are in elements, not bytes.
    ``device`` is ``"cpu"`` or ``"cuda:N"``.  (A named tuple: one is made per
    tensor per call, and this is the cheapest record Python has.)
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    device: str
    data_ptr: int


class SignatureParameter(Protocol):
    """One parameter of a generated kernel, as its signature describes it.

    nt-triton's :class:`nt_triton._abi.KernelParameter` is one; ``kind`` is one
    of ``"pointer"``, ``"size"``, ``"stride"``, ``"scalar"``, ``"symbol"``,
    ``"padded_size"``, ``"int64_flag"``, ``"layout_flag"``, ``"descriptor_flag"``,
    ``"size_alignment"``, ``"meta"``.
    """

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def constexpr(self) -> bool: ...

    @property
    def tensor_index(self) -> int | None:
        """For a tensor's pointer, size or stride: the index among the tensor parameters."""


class Configuration(Protocol):
    """One auto-tuning configuration of a generated kernel."""

    @property
    def num_warps(self) -> int: ...

    @property
    def num_stages(self) -> int: ...

    def kwargs(self) -> dict[str, int]:
        """The constexpr values the configuration gives the kernel, by parameter name."""


class PreparedLaunch(Protocol):
    """One call's launch, prepared by :meth:`GeneratedKernel.prepare`."""

    @property
    def arguments(self) -> Sequence[Any]:
        """The kernel's positional arguments, in signature order (meta parameters excluded)."""

    @property
    def grid(self) -> Any:
        """The grid: a tuple, or a function of the meta values (auto-tuned kernels)."""

    @property
    def meta(self) -> Mapping[str, int] | None:
        """Meta values the caller pinned (tuning skipped), or ``None``."""


Miss = Callable[[tuple[Any, ...], dict[str, Any]], Any]
"""``miss(args, kwargs)``: where a fast path sends a call it has no plan for (full
validation, then :meth:`FastPath.launch_bound`)."""


class RankGroup(Protocol):
    """The processes of a job that tune kernels together (a framework's default process
    group, :attr:`HostReads.group`)."""

    @property
    def rank(self) -> int:
        """This process's place in the group (0 to ``size - 1``)."""

    @property
    def size(self) -> int:
        """How many processes the group has."""

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value`` (picklable), in rank order.  Every rank must call it
        (a collective: it waits for all of them)."""


@dataclass(frozen=True)
class HostReads:
    """How a framework's tensors are read, and what its runtime is asked, on the fast path.

    An adapter gives one to :meth:`GeneratedKernel.fast_launcher`.  The
    ``*_read`` strings are expressions on one tensor, ``{}`` standing for it
    (``"{}.data_ptr()"``): the backend writes them into the hot function it
    generates, so a read costs no call of ours.
    """

    pointer_read: str
    """The tensor's device address (an int)."""

    key_reads: tuple[str, ...]
    """Hashable facts that, with alignment, fix the plan: shape, strides, dtype, device."""

    device_of: Callable[[Any], int]
    """The CUDA device index of a tensor (on a miss)."""

    raw_stream: Callable[[int], int]
    """The framework's current stream on a device, as a raw handle (the capture stream
    while a CUDA graph is captured)."""

    current_device: Callable[[], int] | None
    """The current CUDA device; None where the process sees one GPU (nothing to check)."""

    device_guard: Callable[[int], contextlib.AbstractContextManager[Any]]
    """A context making a device current (to load a module on it, or launch on it)."""

    guard: Callable[[Sequence[Any]], Callable[..., bool]] | None = None
    """Builds, for a call's tensors, a check that other tensors match them (dtype,
    device, shape, strides); None: the dict lookup alone."""

    capturing: Callable[[], bool] = lambda: False
    """Whether the current stream is capturing a CUDA graph (then a miss may not
    compile or tune)."""

    device_name: Callable[[int], str] = lambda index: f"cuda:{index}"
    """The device's name (tuning results are kept per device name)."""

    traced: Callable[[], bool] | None = None
    """True while the framework traces or transforms calls (``torch.compile``,
    ``torch.func``): such calls take the miss path, where the adapter routes
    them (a custom operator); None: never."""

    miss_when: tuple[Callable[[], bool], str] | None = None
    """``(mode, read)``: while ``mode()`` is true, a call where ``read`` (on one tensor,
    ``{}`` standing for it) is true of any tensor goes to the miss path whatever its
    plan (PyTorch: grad mode on and a tensor that requires grad)."""

    timer: Callable[[Callable[[], None], int], list[float]] | None = None
    """``timer(run, count)``: milliseconds of each of ``count`` runs on the device
    (tuning measures with it)."""

    snapshot: Callable[[Any], Callable[[], None]] | None = None
    """Copies a tensor; returns the function that copies it back (tuning restores
    what its runs overwrite)."""

    group: Callable[[], RankGroup | None] | None = None
    """The job's processes, when the framework runs several (its initialised default
    process group) and None otherwise: with tuning together switched on
    (``nt_triton.tuner.tune_together``), they split each tuning between them."""


class FastPath(Protocol):
    """A kernel's per-call fast path for one framework (:meth:`GeneratedKernel.fast_launcher`).

    Calls it has a plan for launch at once; any other goes to :attr:`miss`.
    """

    miss: Miss
    """Where calls without a plan go (the adapter or the kernel may replace it)."""

    @property
    def call(self) -> Callable[..., Any]:
        """The hot function: ``call(*args, **kwargs)`` launches the kernel."""

    @property
    def method(self) -> Callable[..., Any]:
        """The hot function with a first parameter it ignores: what a kernel class's
        ``__call__`` holds, so ``kernel(...)`` runs it with no frame in between."""

    def hot(self, miss: Miss) -> Callable[..., Any]:
        """Another hot function over the same plans, its misses sent to ``miss`` and
        never routed for tracing (a custom operator's implementation)."""

    def launch_bound(self, bound: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Launch a call the adapter validated (``bound``, a
        :class:`~ninetoothed.runtime.binding.BoundCall`) and keep its plan."""


@runtime_checkable
class GeneratedKernel(Protocol):
    """What a code-generation backend returns for one :class:`KernelSpec`.

    Adapters see a generated kernel only through this surface.
    """

    @property
    def spec(self) -> KernelSpec:
        """The kernel IR it was generated from."""

    @property
    def source(self) -> str:
        """The generated source code, as users read it when debugging."""

    @property
    def source_path(self) -> str:
        """Where the generated source lives on disk (the backend's cache)."""

    @property
    def signature(self) -> Iterable[SignatureParameter]:
        """The kernel's parameters, in order (the kernel ABI)."""

    @property
    def configurations(self) -> Sequence[Configuration]:
        """The auto-tuning configurations (one, with launch options, when nothing is tuned)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """Tensor parameters the kernel reads, in parameter order."""

    @property
    def outputs(self) -> tuple[str, ...]:
        """Tensor parameters the kernel writes, in parameter order (functional
        adapters return these)."""

    @property
    def interpreting(self) -> bool:
        """Whether launches run through the backend's CPU interpreter rather than a GPU."""

    def prepare(
        self,
        tensors: Sequence[TensorInfo],
        launch_args: Sequence[Any],
        scalars: dict[str, Any],
    ) -> PreparedLaunch:
        """The per-call host work on already-validated arguments.

        ``tensors`` describes each tensor parameter (in parameter order, scalars
        excluded); ``launch_args`` holds, in the same order, the objects the
        backend hands to its runtime for the tensors' data (for Triton: objects
        with ``data_ptr()`` and ``dtype``, or torch tensors under its
        interpreter); ``scalars`` maps each scalar parameter and each symbol
        the caller gave to its value.  Raises
        :class:`~ninetoothed.errors.LaunchError` when the arguments' shapes do
        not fit the arrangement.
        """

    def launch(self, plan: PreparedLaunch, stream: int = 0) -> None:
        """Launch a prepared call on ``stream`` (a raw handle; 0 on the CPU)."""

    def fast_launcher(self, reads: HostReads, miss: Miss) -> FastPath | None:
        """The per-call fast path for a framework whose tensors read as ``reads``; None
        where the backend has none (calls then take ``prepare`` and ``launch``)."""


@runtime_checkable
class CodegenBackend(Protocol):
    """A code generator, e.g. ``nt_triton``'s Triton backend."""

    name: str

    def generate(self, spec: KernelSpec) -> GeneratedKernel:
        """Generate (or fetch from cache) the kernel for ``spec``."""


@runtime_checkable
class FrameworkAdapter(Protocol):
    """A deep-learning framework's launch glue, e.g. ``nt_torch``'s."""

    @property
    def name(self) -> str:
        """The framework's import name: ``"torch"``, ``"paddle"``, ``"jax"``."""

    @property
    def distribution(self) -> str:
        """The distribution providing this adapter, e.g. ``"nt-torch"``."""

    def recognizes(self, obj: object) -> bool:
        """Whether ``obj`` is a tensor of this framework."""

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, strides, dtype, device and data pointer of ``obj``."""

    @property
    def guards_fast_path(self) -> bool:
        """Whether a kernel's fast path calls the plugins' call guard first, as the
        general path does (Paddle's translator needs it there)."""

    @property
    def autodiff(self) -> AutodiffBinding | None:
        """How declarations (``functional``, ``differentiable``) run on this framework's
        tensors; None where it has no such binding."""

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Validate ``args``/``kwargs`` against ``kernel.spec`` and launch.

        Returns ``None`` for in-place frameworks (PyTorch, PaddlePaddle), the
        outputs for functional ones (JAX).  :class:`ninetoothed.runtime.adapter.Adapter`
        implements it for in-place frameworks.
        """

    def tracing(self) -> bool:
        """Whether a compiler traces the current call (the fast path is installed on an
        eager one)."""

    def launcher(self, kernel: GeneratedKernel, miss: Miss | None = None) -> FastPath | None:
        """This adapter's fast path for ``kernel`` (made once; ``miss`` replaces its miss
        path), or None: asked on the GPU only."""


class AutodiffBinding(Protocol):
    """A framework's side of :mod:`ninetoothed.runtime.autodiff` (``nt_torch.autograd``)."""

    def run(
        self, functional: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, ...]:
        """Call a :class:`~ninetoothed.runtime.autodiff.Functional`: allocate its outputs,
        launch, return them."""

    def concat(self, tensors: list[Any], axis: int) -> Any:
        """Join tensors along ``axis`` (the library's backward rules need it)."""

    def differentiate(self, declaration: Any) -> Callable[..., Any]:
        """The framework's custom-gradient function of a
        :class:`~ninetoothed.runtime.autodiff.Differentiable`."""


@runtime_checkable
class AheadOfTimeBuilder(Protocol):
    """Compiles kernels into a C library (``make(..., caller="cuda")``, ``build``).

    nt-triton's builder answers to ``caller="cuda"``.  Both methods write into
    ``output_dir`` (which exists) a header, a C source and a shared library, and
    describe them (:class:`ninetoothed.aot.CLibrary`); ``target`` names the GPU
    architecture (``"sm_90"``), or None for the current GPU's.
    """

    def stamp(self) -> str:
        """Versions of what compiles (the builder, its compiler): part of the fingerprint
        that decides whether a library on disk is still what a build would write.
        Must be cheap (no compiler imported)."""

    def versioned_modules(self) -> tuple[str, ...]:
        """Top-level modules whose code :meth:`stamp` versions besides ``ninetoothed``:
        a kernel's fingerprint names their functions and classes instead of hashing
        them (:func:`ninetoothed.spec.fingerprint.spec_fingerprint`)."""

    def make(
        self, spec: KernelSpec, *, kernel_name: str, output_dir: Path, target: str | None
    ) -> CLibrary:
        """Compile one kernel; its launch function is ``launch_<kernel_name>``."""

    def build(
        self,
        variants: Sequence[BuildVariant],
        *,
        key_names: Sequence[str],
        kernel_name: str,
        output_dir: Path,
        target: str | None,
    ) -> CLibrary:
        """Compile every variant and a dispatcher ``launch_<kernel_name>`` that takes the
        variants' tensors, then the key values (``int``, named ``key_names``), and
        launches the variant of that key: where several share a key, the fastest on
        representative inputs (timed now on the GPU; without one, the first)."""

    def link(self, sources: Sequence[Path], library: Path, include: Sequence[Path] = ()) -> None:
        """Compile C ``sources`` (translation units the builder wrote, and C that calls
        their launch functions; ``include``: more header directories) and link them
        into the shared library ``library``."""


class NineToothedSpec:
    """Hook specifications; plugins implement them with :data:`hookimpl`."""

    @hookspec(firstresult=True)
    def ninetoothed_codegen_backend(self, name: str) -> CodegenBackend | None:
        """Return the code-generation backend called ``name``, or ``None``.

        The Triton backend answers to ``"triton"``.
        """

    @hookspec(firstresult=True)
    def ninetoothed_framework_adapter(self, obj: object) -> FrameworkAdapter | None:
        """Return the adapter that recognises the host tensor ``obj``, or ``None``."""

    @hookspec(firstresult=True)
    def ninetoothed_ahead_of_time_builder(self, caller: str) -> AheadOfTimeBuilder | None:
        """Return the builder of C libraries called from ``caller``, or ``None``.

        nt-triton's answers to ``"cuda"`` (``make(..., caller="cuda")``).
        """

    @hookspec(firstresult=True)
    def ninetoothed_loaded_kernel(self, source_path: str) -> GeneratedKernel | None:
        """Return the kernel this process generated whose ``source_path`` is the given one,
        or ``None``: launches that name a kernel by its source (PyTorch's custom
        operator) find it here.  Must not import the backend's compiler."""

    @hookspec
    def ninetoothed_call_guard(self) -> Callable[[], None] | None:
        """Return a function that every entry point calls first, with no argument, or ``None``.

        Kernel calls, functional and differentiable calls and the library's
        ops call it before they look at their arguments, traced calls
        included (Dynamo traces it), so it must be cheap plain Python or a
        tracer's own marker.  nt-paddle's is Paddle's ``psdb.fallback``
        (bound to ``recursive=True``): it does nothing when run, and makes
        Paddle's SOT translator run the call in dynamic mode instead of
        simulating it.  Collected when the plugins load and by
        :func:`ninetoothed.runtime.plugins.refresh_call_guard`.
        """

    @hookspec
    def ninetoothed_cli_commands(
        self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> None:
        """Add the plugin's subcommands to the ``ninetoothed`` command (:mod:`ninetoothed.cli`).

        ``subparsers`` is the command's ``add_subparsers()`` result: add a
        parser per command (``subparsers.add_parser("cache", ...)``) and give
        each runnable one a handler, ``parser.set_defaults(handler=function)``:
        ``function(arguments)`` gets the parsed :class:`argparse.Namespace` and
        returns the exit status.  Import what the commands need inside the
        handlers: the command asks every plugin each time it starts.
        """
