"""``mm``: matrix multiplication, the paper's listings 5 and 6, for any number of
leading batch dimensions (``bmm`` is the 3-D case).

Each program computes one ``(BLOCK_SIZE_M, BLOCK_SIZE_N)`` tile of the output
(of one matrix of the batch): it walks the row of ``(BLOCK_SIZE_M,
BLOCK_SIZE_K)`` tiles of ``input`` and the column of ``(BLOCK_SIZE_K,
BLOCK_SIZE_N)`` tiles of ``other`` and accumulates their products in float32.
``bmm``, ``addmm`` and ``conv2d`` reuse :func:`arrangement` and
:func:`application`.  The block sizes are tuned between the bounds of their
``block_size`` symbols; :func:`premake` narrows them for short outputs.
"""

from __future__ import annotations

import functools
from typing import Any

import ninetoothed.language as ntl
from ninetoothed.library.tiling import Premade, Tile, keep, leading, ones
from ninetoothed.symbol import Symbol, block_size
from ninetoothed.tensor import Tensor

BLOCK_SIZE_M = block_size(64, 256)
BLOCK_SIZE_N = block_size(64, 256)
BLOCK_SIZE_K = block_size(32, 64)
"""The tuned block sizes (``bmm``, ``addmm`` and ``conv2d`` take the same)."""


def arrangement(
    input: Tensor,
    other: Tensor,
    output: Tensor,
    BLOCK_SIZE_M: Symbol = BLOCK_SIZE_M,
    BLOCK_SIZE_N: Symbol = BLOCK_SIZE_N,
    BLOCK_SIZE_K: Symbol = BLOCK_SIZE_K,
) -> tuple[Tensor, Tensor, Tensor]:
    """``output`` in tiles; for each, the row of ``input``'s tiles and the column of
    ``other``'s tiles it needs (dimensions before the last two: one matrix each)."""
    batch = output.ndim - 2

    output_arranged = output.tile((*ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_N))
    output_arranged.dtype = output_arranged.dtype.squeeze(leading(batch))

    input_arranged = input.tile((*ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((*ones(batch), 1, -1))
    input_arranged = input_arranged.expand((*keep(batch), -1, output_arranged.shape[-1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(leading(batch + 1))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(leading(batch))

    other_arranged = other.tile((*ones(batch), BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((*ones(batch), -1, 1))
    other_arranged = other_arranged.expand((*keep(batch), output_arranged.shape[-2], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze((*leading(batch), batch + 1))
    other_arranged.dtype.dtype = other_arranged.dtype.dtype.squeeze(leading(batch))

    return input_arranged, other_arranged, output_arranged


def application(input: Tile, other: Tile, output: Tile) -> None:
    """One output tile: the sum over ``k`` of ``input[k] @ other[k]``, in float32."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator  # noqa: F841


TUNING = {"max_num_configs": 16}
"""``make``'s options for the GEMM kernels: at most 16 configurations tried on a GPU."""

THIN = 64
"""Outputs of at most this many rows get thin tiles (see :func:`tallest_block`)."""


def tallest_block(rows: int) -> int | None:
    """The tallest ``BLOCK_SIZE_M`` worth tuning for an output of ``rows`` rows: None
    (the default bounds) unless the output is thin, as in decoding's products."""
    if rows > THIN:
        return None
    return max(16, 1 << (max(rows, 1) - 1).bit_length())


def blocks(tallest: int | None) -> dict[str, Any]:
    """The block sizes to tune, as arrangement arguments: the defaults, or thin
    tiles of at most ``tallest`` rows with longer steps along ``k``."""
    if tallest is None:
        return {}
    return {"BLOCK_SIZE_M": block_size(16, tallest), "BLOCK_SIZE_K": block_size(64, 128)}


def premake(ndim: int = 2, tallest: int | None = None) -> Premade:
    """The kernel for ``ndim``-D operands (2 for ``mm``, 3 for ``bmm``); ``tallest``
    from :func:`tallest_block`."""
    tensors = (Tensor(ndim), Tensor(ndim), Tensor(ndim))
    tuned = functools.partial(arrangement, **blocks(tallest))
    return Premade(tuned, application, tensors, TUNING)
