"""``scaled_mm``: a product of float8 matrices with scales, as ``torch._scaled_mm``.

``output = (input * scale_input) @ (other * scale_other)``, rounded once into
the output's dtype (float16, bfloat16 or float32): ``input`` (M, K) and
``other`` (K, N) hold float8 values, multiplied by the tensor cores' float8
path and accumulated in float32.  The scales are float32 and factor out of the
sum over ``k``, so each program applies them once, to its accumulator:

* tensor-wise: one scale per operand, (1, 1) tensors, broadcast by the
  arrangement;
* row-wise (``rowwise``): ``scale_input`` (M, 1), one per row of ``input``,
  and ``scale_other`` (1, N), one per column of ``other``.

The tiling is :func:`ninetoothed.library.mm.arrangement`'s; a float8 element
is one byte, so the reduction steps are longer than float16's (the tensor
cores take 32 float8 values along ``k`` per instruction).  Large outputs run
in persistent programs, as ``mm``'s; the accumulation is float32 per step
(:func:`application`, torch's default) or the tensor cores' own over all of
``k`` (:func:`fast_application`, torch's ``use_fast_accum``).
"""

from __future__ import annotations

import functools

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library import mm
from ninetoothed.library.tiling import Premade, Tile

__all__ = [
    "BLOCK_SIZE_K",
    "CONFIGS",
    "PERSISTENT_CONFIGS",
    "PERSISTENT_TUNING",
    "TUNING",
    "application",
    "arrangement",
    "fast_application",
    "premake",
]

BLOCK_SIZE_K = block_size(64, 128)
"""The tuned reduction step: twice float16's, for elements of half the size."""

CONFIGS = (
    (128, 128, 128, 8, 4),
    (128, 128, 128, 8, 3),
    (128, 64, 128, 4, 4),
    (64, 128, 128, 4, 4),
    (64, 64, 128, 4, 4),
    (128, 128, 64, 4, 4),
)
"""``(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` tuned over,
chosen by measurement (an H100, 4096^3 and
8192^3, pointer loads): the general space estimates shared memory for 2-byte
elements, so it drops the float8 configurations that fill it, among them the
fastest, 128 x 128 x 128 with 8 warps and 4 stages (about 1.25x the pick from
the general space).  The smaller ones serve short outputs (decoding)."""

TUNING = {"configs": mm.pinned_configs(CONFIGS)}
"""``make``'s options: the float8 configurations above (block sizes pinned by a
test replace them)."""

PERSISTENT_CONFIGS = (
    (128, 256, 128, 8, 3),
    (128, 128, 128, 8, 5),
    (128, 128, 128, 4, 4),
    (256, 128, 128, 8, 3),
    (128, 256, 64, 8, 4),
)
"""The configurations of the persistent variant, which outputs of at least
:data:`ninetoothed.library.mm.PERSISTENT_ELEMENTS` elements take (as ``mm``'s).
On an H100 (``probe``: hand-written Triton 3.6, pointer loads, one program per
multiprocessor, against ``torch._scaled_mm``) 128 x 256 x 128 in 8 warps with 3
stages measured 0.993 (4096^3) and 0.917 (8192^3), against 0.71 for the best
one-program-per-tile form; the others come within 0.86-0.93.  128 x 256 x 128
does not fit a program's shared memory in 4 stages."""

PERSISTENT_TUNING = {"persistent": True, "configs": mm.pinned_configs(PERSISTENT_CONFIGS)}
"""``make``'s options for the persistent variant."""


def arrangement(
    input: Tensor,
    other: Tensor,
    scale_input: Tensor,
    scale_other: Tensor,
    output: Tensor,
    rowwise: bool = False,
    BLOCK_SIZE_M: Symbol = mm.BLOCK_SIZE_M,
    BLOCK_SIZE_N: Symbol = mm.BLOCK_SIZE_N,
    BLOCK_SIZE_K: Symbol = BLOCK_SIZE_K,
) -> tuple[Tensor, ...]:
    """:func:`ninetoothed.library.mm.arrangement`'s tiles, and for each output tile its
    ``BLOCK_SIZE_M`` row scales and ``BLOCK_SIZE_N`` column scales (the one
    tensor-wise scale broadcast to every row or column unless ``rowwise``)."""
    tiles = mm.arrangement(input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    input_arranged, other_arranged, output_arranged = tiles
    if not rowwise:
        scale_input = scale_input.expand((output.shape[0], -1))
        scale_other = scale_other.expand((-1, output.shape[1]))
    rows = scale_input.tile((BLOCK_SIZE_M, 1)).expand((-1, output_arranged.shape[1]))
    rows.dtype = rows.dtype.squeeze(1)  # (BLOCK_SIZE_M,)
    columns = scale_other.tile((1, BLOCK_SIZE_N)).expand((output_arranged.shape[0], -1))
    columns.dtype = columns.dtype.squeeze(0)  # (BLOCK_SIZE_N,)
    return input_arranged, other_arranged, rows, columns, output_arranged


def application(
    input: Tile, other: Tile, scale_input: Tile, scale_other: Tile, output: Tile
) -> None:
    """One output tile: the float32 sum over ``k`` of float8 products, then scaled.

    Each step's products are summed by the tensor cores and then added in float32
    (``max_num_imprecise_acc``: at most one step's worth of the tensor cores' own,
    shorter, float8 accumulation), as ``torch._scaled_mm`` sums by default."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        # The step's length is read off the tile, never named: Triton keeps it a
        # compile-time constant, as ``max_num_imprecise_acc`` needs, only so.
        accumulator = ntl.dot(
            input[k], other[k], accumulator, max_num_imprecise_acc=input.dtype.shape[1]
        )
    # Loaded first: a parameter tile indexed with ``None`` would read an element.
    rows, columns = scale_input, scale_other
    output = accumulator * rows[:, None] * columns[None, :]  # noqa: F841


def fast_application(
    input: Tile, other: Tile, scale_input: Tile, scale_other: Tile, output: Tile
) -> None:
    """:func:`application` with the tensor cores' fast accumulation over all of ``k``
    (``torch._scaled_mm(..., use_fast_accum=True)``): on a Hopper GPU the products
    accumulate in the tensor cores' shorter format (Triton's default for float8),
    elsewhere in float32.  The sum goes into the accumulator itself: written
    ``accumulator += dot``, Triton keeps a separate float32 add per step, which
    waits for each step's products (on an H100, torch's time over ours 0.65 against
    1.03)."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator = ntl.dot(input[k], other[k], accumulator)
    rows, columns = scale_input, scale_other
    output = accumulator * rows[:, None] * columns[None, :]  # noqa: F841


def premake(rowwise: bool = False, persistent: bool = False, fast_accum: bool = False) -> Premade:
    """The kernel for tensor-wise scales, or row-wise ones (``rowwise``); in persistent
    programs (``persistent``, from :func:`ninetoothed.library.mm.uses_persistent`);
    with the tensor cores' fast accumulation (``fast_accum``) or float32 sums."""
    tensors = tuple(Tensor(2) for _ in range(5))
    arranged = functools.partial(arrangement, rowwise=rowwise)
    applied = fast_application if fast_accum else application
    return Premade(arranged, applied, tensors, PERSISTENT_TUNING if persistent else TUNING)
