"""What the C library holds of each op: its kernels and their variants.

Each op of the C API calls one or more kernels of :mod:`ninetoothed.library`;
each kernel is built with ``ninetoothed.build``'s machinery as one
dispatcher, ``launch_nt_ops_<kernel>``, over variants enumerated here from the
kernel module's own ``premake`` (its ranks, flags, row lengths, head sizes),
for every dtype asked for.  The C API (``ninetoothed_ops.c``) computes the
same key values from its arguments as the ops of :mod:`ninetoothed.library.ops`
pick their kernels.

Sizes are run-time values in a C library; a tile as large as a dimension
(a row, a head) is compiled per power of two (:mod:`ninetoothed._aot.sizes`):
each row or head variant names the power of two it serves.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ninetoothed.library import (
    add,
    addmm,
    bmm,
    conv2d,
    fused_add_rms_norm,
    max_pool2d,
    mm,
    rms_norm,
    rotary_position_embedding,
    scaled_dot_product_attention,
    silu,
    softmax,
    swiglu,
)
from ninetoothed.library.ops._common import warps_for_row

__all__ = [
    "ALIASES",
    "CONV2D_GEOMETRIES",
    "OPS",
    "POOL_GEOMETRIES",
    "Kernel",
    "Options",
    "Variant",
    "kernels",
    "op_names",
]


@dataclass(frozen=True)
class Options:
    """What a build of the library covers (the command's options)."""

    max_ndim: int = 4
    """The highest rank of the element-wise ops' strided kernels."""
    max_row: int = 1 << 16
    """The longest row the row-wise ops take (a power of two)."""
    head_dims: tuple[int, ...] = (64, 128)
    """The powers of two attention's and rotary embedding's head dimensions pad to."""
    configurations: int = 4
    """How many configurations of a tuned kernel's space to time on the GPU."""
    float32_products: str = "ieee"
    """How float32 variants compute matrix products (``make``'s ``input_precision``):
    ``"ieee"``, float32 products, as cuBLAS's default math; ``"tf32"`` (Triton's default)
    or ``"tf32x3"``."""


@dataclass(frozen=True)
class Variant:
    """One variant of a kernel: ``premake``'s arguments and the key values selecting it."""

    premake: dict[str, Any]
    key: tuple[int, ...]
    """Its key values, in :attr:`Kernel.key_names` order (the dtype's is appended)."""
    sizes: tuple[tuple[str, int, int], ...] = ()
    """Sizes ``(parameter, dim, size)`` it is compiled for: representative sizes of its
    whole-dimension tiles (the power of two they pad to), or, with :attr:`exact`, the
    values of sizes declared constexpr."""
    constants: tuple[tuple[str, Any], ...] = ()
    """Values of constexpr scalars the call gives (selected by the argument)."""
    tuned: bool = True
    """Whether its kernel's tuning space is timed (else its first configuration)."""
    exact: bool = False
    """Whether :attr:`sizes` stay constexpr, compiled for exactly these values (where the
    application needs them at compile time, as rotary embedding's reshape does)."""


@dataclass(frozen=True)
class Kernel:
    """A kernel of the library: one dispatcher over its variants."""

    name: str
    """``launch_nt_ops_<name>``."""
    module: ModuleType
    key_names: tuple[str, ...]
    """Its key parameters before ``dtype_``."""
    variants: tuple[Variant, ...]


CONV2D_GEOMETRIES = tuple(
    (stride, padding, (1, 1))
    for stride in ((1, 1), (2, 2))
    for padding in ((0, 0), (1, 1), (2, 2), (3, 3))
)
"""``conv2d``'s (stride, padding, dilation) variants."""

POOL_GEOMETRIES = (
    ((2, 2), (2, 2), (0, 0)),
    ((3, 3), (2, 2), (0, 0)),
    ((3, 3), (2, 2), (1, 1)),
    ((3, 3), (1, 1), (1, 1)),
)
"""``max_pool2d``'s (window, stride, padding) variants."""

_TALLEST = (None, *(1 << shift for shift in range(mm.VECTOR_ROWS.bit_length())), 16, 32, 64)
"""``mm``'s ``tallest`` values (:func:`ninetoothed.library.mm.tallest_block`, and the
vector form's, :func:`ninetoothed.library.mm.vector_tallest`)."""


def _pointwise(name: str, module: ModuleType, inputs: int) -> Callable[[Options], Kernel]:
    def made(options: Options) -> Kernel:
        variants = tuple(
            Variant({"patterns": ((None,) * ndim,) * inputs, "ndim": ndim}, (ndim,))
            for ndim in range(1, options.max_ndim + 1)
        )
        return Kernel(name, module, ("ndim_",), variants)

    return made


def _gemm(name: str, module: ModuleType, extra: dict[str, Any]) -> Callable[[Options], Kernel]:
    """A GEMM kernel: thin tiles for short outputs, persistent programs for large ones."""

    def made(options: Options) -> Kernel:
        variants = [
            Variant(
                {**extra, "tallest": tallest, "persistent": persistent},
                (tallest or 0, int(persistent)),
            )
            for tallest in _TALLEST
            for persistent in ((False, True) if tallest is None else (False,))
        ]
        return Kernel(name, module, ("tallest_", "persistent_"), tuple(variants))

    return made


def _powers(largest: int, smallest: int = 1) -> list[int]:
    return [1 << shift for shift in range(smallest.bit_length() - 1, largest.bit_length())]


def _rows(name: str, module: ModuleType, flags: dict[str, Any]) -> Callable[[Options], Kernel]:
    """A row-wise kernel: 2-D (rows, length) tensors, one variant per row's power of two
    (``flags``: more of ``premake``'s arguments)."""
    parameters = {
        softmax: ("input", "output"),
        rms_norm: ("input", "weight", "output") if flags.get("weighted") else ("input", "output"),
        fused_add_rms_norm: ("input", "residual", "weight", "output", "sum"),
    }[module]
    extra = {"dim": 1} if module is softmax else {}

    def made(options: Options) -> Kernel:
        variants = tuple(
            Variant(
                {"ndim": 2, **flags, **extra, "num_warps": warps_for_row(row)},
                (row,),
                tuple((p, 0 if p == "weight" else 1, row) for p in parameters),
            )
            for row in _powers(options.max_row)
        )
        return Kernel(name, module, ("row_",), variants)

    return made


def _attention(options: Options) -> Kernel:
    variants = []
    for gqa, few, head, causal in itertools.product(
        (False, True), (False, True), options.head_dims, (False, True)
    ):
        sizes = tuple((p, 3, head) for p in ("q", "k", "v", "o"))
        variants.append(
            Variant(
                {"gqa": gqa, "few_queries": few, "head_bound": head},
                (int(gqa), int(few), head),
                sizes,
                (("causal", causal),),
                tuned=not few,
            )
        )
    names = ("gqa_", "few_queries_", "head_")
    return Kernel(
        "scaled_dot_product_attention", scaled_dot_product_attention, names, tuple(variants)
    )


def _rotary(options: Options) -> Kernel:
    variants = tuple(
        Variant(
            {"interleaved": interleaved},
            (int(interleaved), head),
            (("input", 3, head), ("output", 3, head), ("sin", 1, head // 2), ("cos", 1, head // 2)),
            exact=True,  # the interleaved application reshapes by the head dimension
        )
        for interleaved in (False, True)
        for head in options.head_dims
    )
    return Kernel(
        "rotary_position_embedding", rotary_position_embedding, ("interleaved_", "head_"), variants
    )


def _geometries(
    name: str,
    module: ModuleType,
    geometries: Sequence[tuple[tuple[int, int], ...]],
    parameters: tuple[str, ...],
) -> Callable[[Options], Kernel]:
    """A kernel per window geometry (``premake``'s pairs ``parameters``), keyed by each
    pair's two values (``<parameter>_h_``, ``<parameter>_w_``)."""
    names = tuple(f"{p}_{axis}_" for p in parameters for axis in "hw")

    def made(options: Options) -> Kernel:
        variants = tuple(
            Variant(dict(zip(parameters, pairs)), tuple(v for pair in pairs for v in pair))
            for pairs in geometries
        )
        return Kernel(name, module, tuple(n.replace("window", "kernel") for n in names), variants)

    return made


OPS: dict[str, tuple[Callable[[Options], Kernel], ...]] = {
    "add": (_pointwise("add", add, 2),),
    "addmm": (_gemm("addmm", addmm, {"input_pattern": (None, None)}),),
    "bmm": (_gemm("bmm", bmm, {}),),
    "conv2d": (
        _geometries("conv2d", conv2d, CONV2D_GEOMETRIES, ("stride", "padding", "dilation")),
    ),
    "fused_add_rms_norm": (_rows("fused_add_rms_norm", fused_add_rms_norm, {}),),
    "max_pool2d": (
        _geometries("max_pool2d", max_pool2d, POOL_GEOMETRIES, ("window", "stride", "padding")),
    ),
    "mm": (_gemm("mm", mm, {"ndim": 2}),),
    "rms_norm": (
        _rows("rms_norm", rms_norm, {"weighted": True}),
        _rows("rms_norm_unweighted", rms_norm, {"weighted": False}),
    ),
    "rotary_position_embedding": (_rotary,),
    "scaled_dot_product_attention": (_attention,),
    "silu": (_pointwise("silu", silu, 1),),
    "softmax": (_rows("softmax", softmax, {}),),
    "swiglu": (_pointwise("swiglu", swiglu, 2),),
}
"""Every forward op of the library, by name: its kernels."""

ALIASES = {"sdpa": "scaled_dot_product_attention", "rope": "rotary_position_embedding"}
"""Short names the command takes."""


def op_names(ops: Sequence[str]) -> list[str]:
    """``ops`` (names or :data:`ALIASES`) as the ops' names, each once, in order; raises
    :class:`ValueError` naming one the library has not."""
    names = []
    for op in ops:
        name = ALIASES.get(op, op)
        if name not in OPS:
            known = ", ".join(sorted([*OPS, *ALIASES]))
            raise ValueError(f"the kernel library has no op {op!r}; it has {known}")
        names.append(name)
    return list(dict.fromkeys(names))


def kernels(ops: Sequence[str], options: Options) -> list[Kernel]:
    """The kernels of ``ops`` (their names: :func:`op_names`)."""
    return [made(options) for op in ops for made in OPS[op]]
