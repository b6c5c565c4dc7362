"""What the hand-written Hopper kernels import from Gluon, in one place.

Gluon (Triton's lower-level language) is experimental: its Hopper module is
missing from some Triton builds and renamed its TMA copies between versions
(Triton 3.6's ``async_copy_global_to_shared`` and ``async_copy_shared_to_global``
are 3.9's ``async_load`` and ``async_store``).  The kernels import the names
from here, which are None where the installed Triton lacks them
(:func:`available` says so).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

copy_in: Any
copy_out: Any

__all__ = [
    "TensorDescriptor",
    "available",
    "bind",
    "copy_in",
    "copy_out",
    "descriptor",
    "fence_async_shared",
    "gl",
    "gluon",
    "mbarrier",
    "run",
    "specialised",
    "streams",
    "tma",
    "warm",
    "warpgroup_mma",
    "warpgroup_mma_wait",
]

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
except ImportError:  # a Triton without Gluon's Hopper module: no kernel here is used
    gluon = gl = mbarrier = tma = warpgroup_mma = warpgroup_mma_wait = None
    fence_async_shared = TensorDescriptor = copy_in = copy_out = None
else:
    # A TMA copy into and out of shared memory (Triton 3.9 renamed both).
    copy_in = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    copy_out = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


_FIELDS: dict[tuple[Any, ...], dict[str, Any]] = {}
"""Per block shape and layout, a descriptor's fields but the tensor's own."""


def descriptor(
    tensor: Any, shape: list[int], strides: list[int], block: list[int], layout: Any
) -> Any:
    """Gluon's host ``TensorDescriptor`` over ``tensor`` (``shape``, ``strides`` in elements,
    copying ``block``-shaped boxes laid out in shared memory as ``layout``), validated
    by Triton once per block shape and layout.  Its ``__post_init__`` checks what the
    routes' ``fits`` checked already (16-byte aligned address and strides, a
    contiguous last dimension), at 5-6 us a descriptor on an H100 host: the later
    ones are copies of the first's fields with the tensor's own."""
    key = (tuple(block), layout)
    fields = _FIELDS.get(key)
    if fields is None:
        made = TensorDescriptor(tensor, shape, strides, block, layout)
        _FIELDS[key] = {k: v for k, v in vars(made).items() if k not in _OWN}
        return made
    made = object.__new__(TensorDescriptor)
    made.__dict__.update(fields)
    made.base, made.shape, made.strides = tensor, shape, strides
    return made


_OWN = ("base", "shape", "strides")


DIRECT_LAUNCH = True
"""Whether :func:`run` launches a kernel compiled in the background through Triton's
compiled kernel directly (on an H100 host, 13-20 us a call against 25-47 us for the
JIT's launch of the same arguments); else through the JIT, which binds and
specialises the arguments again on every call."""


def run(
    jit: Any, compiled: Any, grid: tuple[int], arguments: tuple[Any, ...], **options: Any
) -> None:
    """Launch ``arguments`` (every parameter's, constexprs too) on the 1-D ``grid``:
    through ``compiled``, Triton's compiled kernel of these arguments' specialisation
    (the caller's key finds it), where there is one, else through the JIT function
    ``jit`` with the launch ``options`` (``num_warps``...).  The compiled kernel skips
    the JIT's binding and specialisation of the arguments (Triton 3.6 and 3.9 alike:
    ``CompiledKernel[grid](*arguments)``)."""
    if compiled is not None and DIRECT_LAUNCH:
        compiled[grid[0], 1, 1](*arguments)
    else:
        jit[grid](*arguments, **options)


def bind(
    compiled: Any, grid: tuple[int], arguments: tuple[Any, ...], per_call: Sequence[int]
) -> Callable[..., Any] | None:
    """``launch(stream, *values)``: ``compiled`` launched on the 1-D ``grid`` with
    ``arguments`` (every parameter's), but for the positions in ``per_call``, whose
    values each call passes in that order: a tensor descriptor's as its tensor's
    address, a pointer's as its address, a scalar.  Through the lean C launcher
    (:mod:`nt_triton._launch.lean`), which encodes each descriptor's TMA map from its
    address where Triton's launcher takes a descriptor object and validates it: the
    calls of one layout (the routes' sites) cost a few microseconds, not :func:`run`'s
    13-20.  None where that launcher does not serve the kernel (another Triton than
    3.6, a profiler's launch hooks, no C compiler or driver): :func:`run` launches."""
    from nt_triton._launch import compiled as loaded
    from nt_triton._launch import lean

    if not lean.usable(compiled, loaded.launcher_style(compiled), descriptors=True):
        return None
    metas = list(getattr(compiled.metadata, "tensordesc_meta", None) or ())
    slots = {position: value for value, position in enumerate(per_call)}
    order: list[str] = []
    bound: list[Any] = []
    maps = []
    for position, argument in enumerate(arguments):
        if isinstance(argument, TensorDescriptor):
            if position not in slots or not metas:
                return None  # a bound descriptor has no map here
            described = lean.tensor_map(argument, metas.pop(0))
            if described is None:
                return None
            maps.append(described)
        if position in slots:
            order.append(f"p{slots[position]}")
        else:
            order.append(f"a{len(bound)}")
            bound.append(argument)
    if metas:
        return None
    return lean.make_launch(compiled, tuple(order), (grid[0], 1, 1), bound, tuple(maps))


def streams() -> Callable[[int], int]:
    """``current(device)``: the current CUDA stream of a device, as Triton's launches take it
    (looked up once: Triton's driver is a lazy proxy)."""
    from triton.runtime import driver

    current: Callable[[int], int] = driver.active.get_current_stream
    return current


def specialised(*integers: int) -> tuple[tuple[bool, bool, bool], ...]:
    """How Triton specialises each of these integer arguments: equal to 1, divisible by
    16, 64-bit.  Part of the kernels' compile keys: a compiled kernel serves exactly the
    calls that agree with it on all three (more keys than Triton has is a compile found
    in its cache)."""
    return tuple((value == 1, value % 16 == 0, value >= 2**31) for value in integers)


def warm(
    jit: Any, device: int, grid: tuple[int], arguments: tuple[Any, ...], **options: Any
) -> Any:
    """Compile ``jit`` for ``arguments`` (every parameter's) on CUDA device ``device`` into
    Triton's caches, with its launcher's C module, without launching it: a background
    thread's work.  Returns the compiled kernel (:func:`run` launches it directly)."""
    from triton.runtime import driver

    from nt_triton.tuner import _early as early

    early.driver_settled()  # Triton's lazy driver: initialise it once only
    driver.active.set_current_device(device)  # a new thread's is the first
    kernel = jit.warmup(*arguments, grid=grid, **options)
    # The launcher's C module (a C compiler's run on a cold cache) into Triton's cache:
    # the first launch then builds the launcher from it.
    driver.active.launcher_cls(kernel.src, kernel.metadata)
    return kernel


def available() -> bool:
    """Whether the installed Triton has what the Hopper kernels are written with
    (Gluon's Hopper module and warp specialisation)."""
    return gluon is not None and hasattr(gl, "warp_specialize")
