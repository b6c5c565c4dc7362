"""``addmm``: ``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the output.

The arrangement is ``mm``'s, with ``input`` arranged as the output is; the
application calls ``mm``'s (inlined) with a local accumulator as its output,
so the product never reaches memory before the epilogue.
"""

from __future__ import annotations

import functools

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library import mm
from ninetoothed.library.tiling import Pattern, Premade, Tile

__all__ = ["application", "arrangement", "premake", "vector_application"]


def arrangement(
    input: Tensor,
    mat1: Tensor,
    mat2: Tensor,
    beta: Tensor,
    alpha: Tensor,
    output: Tensor,
    BLOCK_SIZE_M: Symbol = mm.BLOCK_SIZE_M,
    BLOCK_SIZE_N: Symbol = mm.BLOCK_SIZE_N,
    BLOCK_SIZE_K: Symbol = mm.BLOCK_SIZE_K,
) -> tuple[Tensor, ...]:
    """``mm``'s arrangement of ``mat1``, ``mat2`` and ``output``; ``input`` like ``output``."""
    blocks = (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    mat1_arranged, mat2_arranged, output_arranged = mm.arrangement(mat1, mat2, output, *blocks)
    _, _, input_arranged = mm.arrangement(mat1, mat2, input.expand_as(output), *blocks)
    return input_arranged, mat1_arranged, mat2_arranged, beta, alpha, output_arranged


def application(input: Tile, mat1: Tile, mat2: Tile, beta: Tile, alpha: Tile, output: Tile) -> None:
    """One output tile: ``mm``'s product, then ``beta * input + alpha * product``."""
    product = ntl.zeros(output.shape, dtype=ntl.float32)
    mm.application(mat1, mat2, product)
    output = beta * ntl.cast(input, ntl.float32) + alpha * product  # noqa: F841


def vector_application(
    input: Tile, mat1: Tile, mat2: Tile, beta: Tile, alpha: Tile, output: Tile
) -> None:
    """:func:`application` with ``mm``'s vector form of the product (outputs of a few
    rows and columns, :func:`ninetoothed.library.mm.vector_tallest`)."""
    product = ntl.zeros(output.shape, dtype=ntl.float32)
    mm.vector_application(mat1, mat2, product)
    output = beta * ntl.cast(input, ntl.float32) + alpha * product  # noqa: F841


def premake(
    input_pattern: Pattern, tallest: int | None = None, persistent: bool = False
) -> Premade:
    """The kernel for an ``input`` of this broadcast pattern (at most 2-D); ``tallest``
    and ``persistent`` as for ``mm``."""
    tensors = (Tensor(shape=input_pattern), Tensor(2), Tensor(2), Tensor(0), Tensor(0), Tensor(2))
    tuned = functools.partial(arrangement, **mm.blocks(tallest))
    applied = vector_application if mm.is_vector(tallest) else application
    return Premade(tuned, applied, tensors, mm.tuning(tallest, persistent))
