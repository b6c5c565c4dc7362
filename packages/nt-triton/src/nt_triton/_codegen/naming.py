"""Every identifier generated code uses, spelled in this one module.

Generated kernels, host code and trampolines share one naming scheme (the
idea upstream NineToothed started with): a tensor parameter ``x`` gives
``x_pointer``, ``x_size_0``, ``x_stride_0``, ``x_arange_1_0`` …, and every
name NineToothed itself introduces starts with ``ninetoothed_``.  Nothing
else in nt-triton, or in an adapter, spells one of these names: it asks this
module, so a name can change here and nowhere else.
"""

from __future__ import annotations

__all__ = [
    "ADD",
    "CALLEE",
    "DESCRIBABLE",
    "GRID",
    "GRID_FUNCTION",
    "HOST_FUNCTION",
    "HOST_POINTERS",
    "HOST_SCALARS",
    "HOST_TENSORS",
    "INT64_FLAG",
    "KEEP",
    "LIBDEVICE",
    "MASK",
    "META",
    "MISMATCH",
    "FITS_BROADCAST",
    "FITS_WITHIN",
    "NEW_TUPLE",
    "NEXT_POWER_OF_TWO",
    "OVERLAP",
    "PERSISTENT_INDEX",
    "PIN",
    "PLAN",
    "POINTERS",
    "PREFIX",
    "PROGRAM_CAP",
    "PROGRAM_COUNT",
    "PROGRAM_ID",
    "PROMOTED_MATH",
    "SPREAD",
    "TILE",
    "UNMET",
    "UNUSED",
    "UNUSED_OF",
    "aligned",
    "arange",
    "arange_vector",
    "descriptor_flag",
    "flat",
    "grid_index",
    "grid_size",
    "helper",
    "hoisted",
    "identifier",
    "inline_result",
    "inline_suffix",
    "inlined_local",
    "kernel",
    "module",
    "numbered",
    "offsets",
    "output_pointer",
    "padded_size",
    "placeholder",
    "pointer",
    "promoted_math",
    "size",
    "stride",
    "trampoline",
]

PREFIX = "ninetoothed_"
"""Names NineToothed introduces start with this (users' names never should)."""

# ----------------------------------------------------------- kernel parameters


def pointer(parameter: str) -> str:
    """The kernel parameter holding tensor ``parameter``'s data pointer."""
    return f"{parameter}_pointer"


def offsets(parameter: str) -> str:
    """The kernel parameter holding jagged tensor ``parameter``'s offsets pointer."""
    return f"{parameter}_offsets"


def size(parameter: str, dim: int) -> str:
    """The kernel parameter holding the size of ``parameter``'s source dimension ``dim``."""
    return f"{parameter}_size_{dim}"


def stride(parameter: str, dim: int) -> str:
    """The kernel parameter holding the stride of ``parameter``'s source dimension ``dim``."""
    return f"{parameter}_stride_{dim}"


def padded_size(parameter: str, depth: int, dim: int) -> str:
    """The constexpr power of two a tile size of ``parameter`` is padded to."""
    return f"{parameter}_padded_size_{depth}_{dim}"


INT64_FLAG = f"{PREFIX}int64"
"""The constexpr flag that widens strides to 64 bits."""

# ------------------------------------------------------------- kernel locals

PROGRAM_ID = f"{PREFIX}program_id"
"""The program's linear index, ``tl.program_id(0)``."""


PERSISTENT_INDEX = f"{PREFIX}persistent_index"
PROGRAM_COUNT = f"{PREFIX}program_count"
"""A persistent program's loop index over the grid, and the grid's program count
(see :mod:`nt_triton._codegen.persistent_loop`)."""


def grid_index(dim: int) -> str:
    """The program's index along grid dimension ``dim``."""
    return f"{PREFIX}grid_index_{dim}"


def arange(parameter: str, depth: int, dim: int) -> str:
    """The ``tl.arange`` of dimension ``dim`` of level ``depth`` of ``parameter``'s tile."""
    return f"{parameter}_arange_{depth}_{dim}"


def arange_vector(parameter: str, depth: int, dim: int) -> str:
    """The one-dimensional twin of :func:`arange` (``x.offsets(dim)`` is built on it)."""
    return f"{parameter}_arange_vector_{depth}_{dim}"


def placeholder(number: int) -> str:
    """A symbol standing for an application expression while indices are resolved."""
    return f"{PREFIX}placeholder_{number}"


POINTERS = "pointers"
MASK = "mask"
KEEP = "keep"
TILE = "tile"
"""Stems of hoisted loads: ``x_pointers_N``, ``x_mask_N``, ``x_tile_N`` (and ``x_keep_N``,
the mask applied after a tile loaded once along some dimensions is broadcast)."""


def hoisted(parameter: str, stem: str) -> str:
    """The stem of a hoisted statement about ``parameter``'s tile (see :data:`TILE`)."""
    return f"{parameter}_{stem}"


def numbered(stem: str, number: int) -> str:
    """A fresh local ``stem_N``."""
    return f"{stem}_{number}"


def inline_suffix(number: int) -> str:
    """Appended to the locals of the ``number``-th inlined helper call."""
    return f"_inline_{number}"


def inlined_local(name: str, suffix: str) -> str:
    """A local ``name`` of an inlined helper, renamed apart from the caller's."""
    return f"{name}{suffix}"


def inline_result(function: str, suffix: str) -> str:
    """The local an inlined helper's return value is assigned to."""
    return f"{function}_result{suffix}"


# ------------------------------------------------------------ module level


def identifier(name: str) -> str:
    """``name`` made a Python identifier (other characters become ``_``)."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"k_{cleaned}"


def kernel(name: str) -> str:
    """The ``@triton.jit`` function generated for the kernel called ``name``."""
    return f"{identifier(name)}_kernel"


def helper(name: str) -> str:
    """The module-level name a user's ``triton.jit`` helper ``name`` is injected under."""
    return f"{PREFIX}helper_{identifier(name)}"


def module(stem: str) -> str:
    """The Python module name a cached source file ``stem.py`` is loaded under."""
    return f"{PREFIX}generated_{stem}"


LIBDEVICE = "libdevice"
"""The module name libdevice is imported under."""

ADD = f"{PREFIX}add"
"""The generated module's ``+`` of two values: the logical or of two bools, like the
frameworks (Triton adds bools modulo 2, an exclusive or)."""

SPREAD = f"{PREFIX}spread"
"""The generated module's fill of a tile loaded once along some dimensions: the lanes
outside the source along the others get the load's fill value (see ``memory.Spread``)."""

PROMOTED_MATH = ("exp", "exp2")
"""``ninetoothed.language`` functions that compute float16 and bfloat16 operands in
float32 (as newer upstream does; Triton's take float32 and float64 only)."""


def promoted_math(name: str) -> str:
    """The generated module's ``ntl.<name>`` for a name of :data:`PROMOTED_MATH`."""
    return f"{PREFIX}{name}"


# ------------------------------------------------------------------ host code

HOST_FUNCTION = f"{PREFIX}host"
"""The generated host function: ``(tensors, pointers, scalars) -> (arguments, grid)``."""

HOST_TENSORS = "tensors"
HOST_POINTERS = "pointers"
HOST_SCALARS = "scalars"
"""The host function's parameters."""

GRID = f"{PREFIX}grid"
GRID_FUNCTION = "grid"
META = "META"
"""The launch grid, the grid function of auto-tuned kernels, and its argument."""


def grid_size(dim: int) -> str:
    """The host's local for the size of grid dimension ``dim``."""
    return f"{PREFIX}grid_size_{dim}"


PROGRAM_CAP = f"{PREFIX}program_cap"
"""The host's function giving the most programs a persistent kernel launches."""

MISMATCH = f"{PREFIX}mismatch"
FITS_BROADCAST = f"{PREFIX}fits_broadcast"
FITS_WITHIN = f"{PREFIX}fits_within"
UNMET = f"{PREFIX}unmet"
OVERLAP = f"{PREFIX}overlap"
UNUSED_OF = f"{PREFIX}unused_of"
NEXT_POWER_OF_TWO = "next_power_of_two"
PIN = f"{PREFIX}pinned"
"""Functions the host code calls (raising launch errors; the parameters a call leaves
unused; padding sizes; pinned meta values)."""

UNUSED = f"{PREFIX}unused"
"""The host's set of the tensor parameters (indices) a call leaves unused, whose shape
checks it skips (see :mod:`ninetoothed.spec._guards`)."""

NEW_TUPLE = f"{PREFIX}new_tuple"
PLAN = f"{PREFIX}plan"
"""``tuple.__new__`` and the launch plan type, which the host function returns."""

# ---------------------------------------------------------------- trampolines

CALLEE = f"{PREFIX}kernel"
"""The name a trampoline calls the generated kernel by."""


def output_pointer(index: int) -> str:
    """A trampoline parameter receiving a launcher's pointer to output ``index``."""
    return f"{PREFIX}output_{index}"


def trampoline(kernel_name: str, launcher: str) -> str:
    """The trampoline of kernel ``kernel_name`` for ``launcher`` (e.g. ``jax_triton``)."""
    return f"{identifier(kernel_name)}_{identifier(launcher)}"


def flat(parameter: str, dims: tuple[int, ...]) -> str:
    """The layout flag: whether ``parameter``'s source dimensions ``dims`` lie as one."""
    return f"{PREFIX}{parameter}_flat_{'_'.join(map(str, dims))}"


def descriptor_flag(parameter: str) -> str:
    """The constexpr flag saying a call may load and store ``parameter``'s tiles through
    tensor descriptors (see :mod:`nt_triton._codegen.descriptors`)."""
    return f"{PREFIX}descriptors_{parameter}"


DESCRIBABLE = f"{PREFIX}describable"
"""The host's test of one tensor for :func:`descriptor_flag` (:mod:`nt_triton._describable`)."""


def aligned(index: int) -> str:
    """The alignment of a size the host reports (number ``index``; see ``divisibility``)."""
    return f"{PREFIX}aligned_{index}"
