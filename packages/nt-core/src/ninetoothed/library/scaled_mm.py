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
cores take 32 float8 values along ``k`` per instruction).
"""

from __future__ import annotations

import functools

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library import mm
from ninetoothed.library.tiling import Premade, Tile

__all__ = ["BLOCK_SIZE_K", "CONFIGS", "TUNING", "application", "arrangement", "premake"]

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
    """One output tile: the float32 sum over ``k`` of float8 products, then scaled."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    # Loaded first: a parameter tile indexed with ``None`` would read an element.
    rows, columns = scale_input, scale_other
    output = accumulator * rows[:, None] * columns[None, :]  # noqa: F841


def premake(rowwise: bool = False) -> Premade:
    """The kernel for tensor-wise scales, or row-wise ones (``rowwise``)."""
    tensors = tuple(Tensor(2) for _ in range(5))
    arranged = functools.partial(arrangement, rowwise=rowwise)
    return Premade(arranged, application, tensors, TUNING)
