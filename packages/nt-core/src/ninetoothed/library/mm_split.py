"""Split-K matrix multiplication, the first of two passes: partial products.

When an output has too few tiles to fill the GPU (a convolution's 576 x 512
output of a 4,608-long reduction makes 20 tiles of 128 x 128 for 132
processors), the reduction is cut into ``S`` chunks and each program computes
one tile of one chunk's product: the grid is (chunk, *batch, row block,
column block).  Each program writes its float32 partial sum to its own slice
of a workspace of shape ``(S, *batch, M, N)``; a second kernel
(:mod:`~ninetoothed.library.split_sum`) adds the ``S`` slices in a fixed order
and rounds once, so the result is deterministic (no atomics).

The arrangement is ``mm``'s with one more level: the ``k`` tiles of the
operands are tiled again, in chunks of ``ceil(k tiles / S)`` consecutive
``k`` tiles, one chunk per program.  ``S`` is the workspace's first size, so
the op chooses it at run time (:mod:`~ninetoothed.library.ops.split`);
the chunk length follows from it and the tuned ``BLOCK_SIZE_K``.  When ``S``
chunks of that length run past the last ``k`` tile (``S`` does not divide
the tile count), the tile level is padded: the padded tiles lie past the
operands' end and load as zeros, so the last chunk is shorter in effect.
The application is ``mm``'s, unchanged.
"""

from __future__ import annotations

import functools

from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library import mm
from ninetoothed.library.tiling import Premade, keep, leading, ones

__all__ = ["application", "arrangement", "premake"]


def arrangement(
    input: Tensor,
    other: Tensor,
    workspace: Tensor,
    BLOCK_SIZE_M: Symbol = mm.BLOCK_SIZE_M,
    BLOCK_SIZE_N: Symbol = mm.BLOCK_SIZE_N,
    BLOCK_SIZE_K: Symbol = mm.BLOCK_SIZE_K,
) -> tuple[Tensor, Tensor, Tensor]:
    """``input`` (*batch, M, K) @ ``other`` (*batch, K, N) in ``S`` partial products,
    into ``workspace`` (S, *batch, M, N): one program per chunk and output tile."""
    batch = input.ndim - 2
    splits = workspace.shape[0]

    parts = workspace.tile((1, *ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_N))
    parts.dtype = parts.dtype.squeeze(leading(batch + 1))
    rows, columns = parts.shape[-2], parts.shape[-1]

    # (*batch, row block, chunk) of (chunk length,) k tiles of (BLOCK_SIZE_M, BLOCK_SIZE_K).
    input_arranged = input.tile((*ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged.dtype = input_arranged.dtype.squeeze(leading(batch))
    input_arranged = _chunks(input_arranged, batch + 1, splits)
    input_arranged = input_arranged.permute((batch + 1, *range(batch + 1)))
    input_arranged = input_arranged.unsqueeze(batch + 2).expand((*keep(batch + 2), columns))

    # (*batch, chunk, column block) of (chunk length,) k tiles of (BLOCK_SIZE_K, BLOCK_SIZE_N).
    other_arranged = other.tile((*ones(batch), BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged.dtype = other_arranged.dtype.squeeze(leading(batch))
    other_arranged = _chunks(other_arranged, batch, splits)
    other_arranged = other_arranged.permute((batch, *range(batch), batch + 1))
    other_arranged = other_arranged.unsqueeze(batch + 1)
    other_arranged = other_arranged.expand((*keep(batch + 1), rows, -1))

    return input_arranged, other_arranged, parts


def _chunks(tiles: Tensor, dim: int, splits: SymbolLike) -> Tensor:
    """``tiles`` with dimension ``dim`` (its ``k`` tiles) cut into exactly ``splits``
    chunks of ``ceil(count / splits)`` tiles: each chunk becomes a one-dimensional
    tile of ``k`` tiles.  The tile level is padded to ``splits`` whole chunks first
    (without it, ``ceil(count / length)`` chunks could be fewer than ``splits``:
    7 tiles in 4 chunks of 2 make 4, but 5 tiles in 4 chunks of 2 make 3); padded
    tiles lie past the operand's end, so they load as zeros."""
    count = tiles.shape[dim]
    length = (count + splits - 1) // splits
    padding = tuple((0, splits * length - count) if d == dim else (0, 0) for d in range(tiles.ndim))
    padded = tiles.pad(padding)
    chunked = padded.tile(tuple(length if d == dim else 1 for d in range(tiles.ndim)))
    chunked.dtype = chunked.dtype.squeeze(tuple(d for d in range(tiles.ndim) if d != dim))
    return chunked


application = mm.application


def premake(ndim: int = 2, tallest: int | None = None) -> Premade:
    """The kernel for ``ndim``-D operands (2 for ``mm`` and ``addmm``, 3 for ``bmm``)
    and an ``ndim + 1``-D workspace; ``tallest`` as for ``mm``."""
    tensors = (Tensor(ndim), Tensor(ndim), Tensor(ndim + 1))
    tuned = functools.partial(arrangement, **mm.blocks(tallest))
    return Premade(tuned, application, tensors, mm.tuning(tallest, persistent=False))
