"""The lean launcher: a small C extension that launches a bound kernel.

Triton's own launcher parses every argument of every launch from a tuple
(about 6 µs per call on an H100 host, more than half of a whole
``torch.add``).  A bound launch knows all but the pointers and run-time
scalars beforehand, so ``lean_launch.c`` keeps the rest packed and, per call,
converts only the per-call values and calls ``cuLaunchKernel``.

The extension is one module for all kernels, built on first use with the
system's C compiler through Triton's own helper (``triton.runtime.build``,
cached in Triton's cache like Triton's launchers) against the ``cuda.h``
Triton ships; it loads the CUDA driver with ``dlopen`` (``libcuda.so.1``,
or the file ``NINETOOTHED_LIBCUDA`` names, as NineToothed's C libraries do).
Launches take it only where it is known to pass what Triton's launcher
passes (:func:`usable`); anywhere else, with ``NINETOOTHED_C_LAUNCHER=off``,
or where it cannot be built, they take Triton's launcher as before.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ninetoothed.runtime.hookspecs import HostReads
from ninetoothed.runtime.once import Once
from nt_triton import knobs
from nt_triton._launch.layout import TensorMap, parameter_layout

__all__ = [
    "NAME",
    "SOURCES",
    "build",
    "built",
    "extension",
    "hooks_registered",
    "make_launch",
    "make_pinned",
    "tensor_map",
    "usable",
]

NAME = "ninetoothed_lean_launch"
"""The extension module's name (its ``PyInit_`` function's)."""

SOURCES = tuple(
    Path(__file__).with_name(name) for name in ("lean_launch.c", "lean_maps.c", "lean_pinned.c")
)
"""The extension's C source, in files compiled as one (the later use the first's types):
Triton's module cache keys on the whole text."""

_log = logging.getLogger(__name__)


def build() -> Any:
    """Build (or find in Triton's cache) and import the extension; its driver not yet loaded."""
    from triton.runtime.build import compile_module_from_src

    from nt_triton.aot._cc import cuda_include

    return compile_module_from_src(
        src="\n".join(path.read_text() for path in SOURCES),
        name=NAME,
        include_dirs=[str(cuda_include())],
        libraries=["dl"],
    )


def driver_path() -> str:
    """The CUDA driver library the extension loads."""
    return os.environ.get("NINETOOTHED_LIBCUDA") or "libcuda.so.1"


def _build() -> Any | None:
    if not knobs.c_launcher():
        _log.debug("lean launcher off (NINETOOTHED_C_LAUNCHER)")
        return None
    try:
        return build()
    except Exception as error:  # noqa: BLE001 - any failure: Triton's launcher does the work
        _log.debug("lean launcher unavailable, using Triton's launcher: %s", error)
        return None


def _load() -> Any | None:
    module = built()  # one build, whichever of built() and extension() asks first
    if module is None:
        return None
    try:
        module.load(driver_path())
    except Exception as error:  # noqa: BLE001 - any failure: Triton's launcher does the work
        _log.debug("CUDA driver unavailable, using Triton's launcher: %s", error)
        return None
    return module


built: Once[Any | None] = Once(_build)
"""``built()``: the extension, built, whether or not the CUDA driver loads (its ``Pinned``
needs none); None with ``NINETOOTHED_C_LAUNCHER=off``, no C compiler or a failed build."""

extension: Once[Any | None] = Once(_load)
"""``extension()``: the extension with the CUDA driver loaded, or None where launches take
Triton's launcher: ``NINETOOTHED_C_LAUNCHER=off``, no C compiler, a failed build, no
driver.  Takes :data:`built`'s module, so the extension is built once per process."""


def hooks_registered() -> bool:
    """Whether a profiler registered Triton launch hooks (then launches take Triton's launcher).

    The lean launcher calls no hooks; read when a kernel is loaded, not per call.
    """
    try:
        from triton import knobs as triton_knobs

        runtime = triton_knobs.runtime
        enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
    except (ImportError, AttributeError):
        return False
    return bool(getattr(enter, "calls", None) or getattr(leave, "calls", None))


def usable(kernel: Any, style: str, descriptors: bool = False) -> bool:
    """Whether launches of the loaded ``kernel`` may take the lean launcher.

    Only where its parameters are known to be Triton 3.6's (launcher style
    ``"3.6"``: no scratch memory), one CTA per program (no clusters), neither
    cooperative nor programmatic-dependent launches, and no profiler's launch
    hooks (those run in Triton's launcher).  Tensor descriptors only where the
    caller describes them (``descriptors``: :func:`tensor_map`) and Triton
    lowered every one to a TMA map (its ``tensordesc_meta``), none of fp4.
    """
    metadata = kernel.metadata
    launcher = kernel.run
    described = getattr(metadata, "tensordesc_meta", None)
    if described and not (descriptors and all(map(_plain_map, described))):
        return False
    return (
        style == "3.6"
        and getattr(metadata, "num_ctas", 1) == 1
        and not getattr(launcher, "launch_cooperative_grid", False)
        and not getattr(launcher, "launch_pdl", False)
        and getattr(kernel, "src", None) is not None
        and not hooks_registered()
        and extension() is not None
    )


def _plain_map(meta: dict[str, Any] | None) -> bool:
    """Whether Triton lowered a descriptor to a tiled TMA map of whole elements (not fp4,
    not im2col): what :func:`tensor_map` describes."""
    return meta is not None and not meta.get("fp4_padded") and not meta.get("is_im2col")


def tensor_map(descriptor: Any, meta: dict[str, Any]) -> TensorMap | None:
    """How the lean launcher encodes ``descriptor`` (a host ``TensorDescriptor`` of the
    call a launch is bound for) as Triton 3.6's launcher does (``make_tensordesc_arg``),
    from the compiled kernel's ``meta`` of that parameter: its swizzle, element size
    and (the device's numbering of) its element type; :func:`usable` with ``descriptors``
    has checked it is a tiled map of whole elements.  None for a descriptor whose
    float32 elements are rounded to tf32 (another data type, Triton 3.9's)."""
    from triton.backends.nvidia.driver import TMA_DTYPE_DEVICE_TO_HOST

    if getattr(descriptor, "round_f32_to_tf32", False):
        return None
    return TensorMap(
        data_type=TMA_DTYPE_DEVICE_TO_HOST[meta["elem_type"]],
        swizzle=int(meta["swizzle"]),
        fill=1 if getattr(descriptor, "padding", "zero") == "nan" else 0,
        element_size=int(meta["elem_size"]),
        shape=tuple(int(size) for size in descriptor.shape),
        strides=tuple(int(stride) for stride in descriptor.strides),
        block=tuple(int(size) for size in meta["block_size"]),
    )


def make_launch(
    kernel: Any,
    order: tuple[str, ...],
    grid: tuple[int, int, int],
    bound: list[Any],
    maps: tuple[TensorMap, ...] = (),
) -> Any | None:
    """``launch(stream, *per_call)`` of ``kernel`` through the extension, or None where its
    signature has no plain layout (:func:`~nt_triton._launch.layout.parameter_layout`;
    ``maps`` describes its tensor descriptors, whose per-call values are addresses)."""
    module = extension()
    if module is None:
        return None
    layout = parameter_layout(list(kernel.src.signature.values()), order, bound, maps)
    if layout is None:
        return None
    metadata = kernel.metadata
    try:
        return module.Launch(
            name=str(getattr(metadata, "name", "kernel")),
            function=kernel.function,
            grid=grid,
            block=32 * metadata.num_warps,
            shared=metadata.shared,
            constants=layout.constants,
            slots=layout.slots,
            arity=layout.arity,
            keep=kernel,
            maps=layout.maps,
        )
    except (ValueError, TypeError, OverflowError) as error:  # a grid past the driver's range
        _log.debug("lean launcher refused a launch, using Triton's launcher: %s", error)
        return None


_METHOD = re.compile(r"^\{\}\.(\w+)\(\)$")
_ATTRIBUTE = re.compile(r"^\{\}\.(\w+)$")


def make_pinned(
    pinned: list[Any],
    generation: list[int],
    repin: Callable[[tuple[Any, ...]], Any],
    reads: HostReads,
    count: int,
    tensors: Sequence[int],
    scalars: Sequence[int],
    pairs: Sequence[tuple[int, int]],
) -> Any | None:
    """The C twin (``lean_pinned.c``) of the pinned launch that
    :func:`~nt_triton._launch.hot_source.pinned_source` writes in Python, over the same
    ``pinned``, ``generation`` and ``repin``; None where the framework's pointer read
    is not a method call (``{}.data_ptr()``) or its miss test not an attribute
    (``{}.requires_grad``), or the extension is not built."""
    pointer = _METHOD.match(reads.pointer_read)
    miss_mode, miss_attribute = None, None
    if reads.miss_when is not None:
        attribute = _ATTRIBUTE.match(reads.miss_when[1])
        if attribute is None:
            return None
        miss_mode, miss_attribute = reads.miss_when[0], attribute.group(1)
    module = built() if pointer is not None else None
    if module is None or pointer is None:
        return None
    try:
        return module.Pinned(
            pinned=pinned, generation=generation, repin=repin, stream=reads.raw_stream,
            current_device=reads.current_device, miss_mode=miss_mode,
            pointer=pointer.group(1), miss_attribute=miss_attribute, count=count,
            tensors=tuple(tensors), scalars=tuple(scalars), pairs=tuple(pairs),
        )  # fmt: skip
    except ValueError as error:  # more values than it holds: the Python launch
        _log.debug("no C pinned launch: %s", error)
        return None
