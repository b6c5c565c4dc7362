"""The plugin contracts of NineToothed, as pluggy hook specifications.

Two kinds of plugin exist:

* a **code-generation backend** (``nt-triton``) turns a validated
  :class:`ninetoothed.ir.KernelSpec` into a :class:`GeneratedKernel`;
* a **framework adapter** (``nt-torch``, ``nt-paddle``, ``nt-jax``) recognises
  a host tensor, describes it (shape, strides, dtype, device, data pointer,
  current stream) and launches a generated kernel on it.

Plugins are found through the ``ninetoothed`` entry-point group when their
distribution is installed, or registered by hand with
:func:`ninetoothed.plugins.register`.  The core never imports a backend or a
framework; it only calls these hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import pluggy

if TYPE_CHECKING:
    from ninetoothed.ir import KernelSpec

PROJECT_NAME = "ninetoothed"
"""The pluggy project name, which is also the entry-point group plugins use."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class TensorInfo(NamedTuple):
    """What an adapter reports about one host tensor.

    ``dtype`` is a canonical name shared by every framework: ``"float16"``,
    ``"bfloat16"``, ``"float32"``, ``"float64"``, ``"int8"`` … ``"int64"``,
    ``"uint8"``, ``"bool"``.  ``strides`` are in elements, not bytes.
    ``device`` is ``"cpu"`` or ``"cuda:N"``.  (A named tuple: one is made per
    tensor per call, and this is the cheapest record Python has.)
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    device: str
    data_ptr: int


@runtime_checkable
class GeneratedKernel(Protocol):
    """What a code-generation backend returns for one :class:`KernelSpec`."""

    spec: KernelSpec
    source: str
    """The generated source code, as users read it when debugging."""

    source_path: str
    """Where the generated source lives on disk (the backend's cache)."""

    def launch(
        self,
        tensors: list[TensorInfo],
        launch_args: list[Any],
        scalars: dict[str, Any],
        stream: int,
    ) -> None:
        """Launch on already-validated arguments.

        ``tensors`` describes each tensor parameter (in parameter order, scalars
        excluded); ``launch_args`` holds, in the same order, the objects the
        backend hands to its runtime for the tensors' data (for Triton: objects
        with ``data_ptr()`` and ``dtype``, or torch tensors under its
        interpreter); ``scalars`` maps each scalar parameter and each
        constexpr/runtime symbol the caller gave to its value; ``stream`` is the
        raw stream handle to launch on (0 on the CPU).
        """


@runtime_checkable
class CodegenBackend(Protocol):
    """A code generator, e.g. ``nt_triton``'s Triton backend."""

    name: str

    def generate(self, spec: KernelSpec) -> GeneratedKernel:
        """Generate (or fetch from cache) the kernel for ``spec``."""


@runtime_checkable
class FrameworkAdapter(Protocol):
    """A deep-learning framework's launch glue, e.g. ``nt_torch``'s."""

    name: str
    """The framework's import name: ``"torch"``, ``"paddle"``, ``"jax"``."""

    distribution: str
    """The distribution providing this adapter, e.g. ``"nt-torch"``."""

    functional: bool
    """True when the framework's arrays are immutable (JAX): kernels then
    return their outputs instead of writing into the arguments."""

    def recognizes(self, obj: object) -> bool:
        """Whether ``obj`` is a tensor of this framework."""

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, strides, dtype, device and data pointer of ``obj``."""

    def current_stream(self, device: str) -> int:
        """The raw handle of the framework's current stream on ``device``."""

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Validate ``args``/``kwargs`` against ``kernel.spec`` and launch.

        Returns ``None`` for in-place frameworks, the outputs for functional
        ones.
        """


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
