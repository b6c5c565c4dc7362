"""Split-K matrix multiplication, the second pass: the sum of the partial products.

The workspace ``(S, *shape)`` holds ``S`` float32 partial products
(:mod:`~ninetoothed.library.mm_split`); each program takes one block of
``BLOCK_SIZE`` elements of the output (flat, in row-major order) and adds the
``S`` partials of those elements, in order and in float32, before rounding
once to the output's dtype.  The ``addmm`` variant applies its epilogue,
``beta * input + alpha * sum``, with ``input`` broadcast to the output; the
others store the sum.
"""

from __future__ import annotations

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Pattern, Premade, Tile, flat_blocks

__all__ = [
    "BLOCK_SIZE",
    "addmm_application",
    "addmm_arrangement",
    "application",
    "arrangement",
    "partials",
    "premake",
    "total",
]

BLOCK_SIZE = block_size(256, 2048)
"""The tuned block: small enough that a small output still spreads over the GPU."""


def partials(workspace: Tensor, output: Tensor, block: Symbol) -> Tensor:
    """For each block of ``output``'s elements, the ``S`` blocks of ``workspace``
    under it: a grid of blocks, each a (S,) tile of (block,) tiles."""
    flat = workspace.flatten(start_dim=1) if workspace.ndim > 2 else workspace
    arranged = flat.tile((1, block))
    arranged.dtype = arranged.dtype.squeeze(0)
    arranged = arranged.tile((-1, 1))
    arranged = arranged.squeeze(0)
    arranged.dtype = arranged.dtype.squeeze(1)
    return arranged


def arrangement(
    workspace: Tensor, output: Tensor, BLOCK_SIZE: Symbol = BLOCK_SIZE
) -> tuple[Tensor, Tensor]:
    """One block of output elements per program, with its partials."""
    return partials(workspace, output, BLOCK_SIZE), flat_blocks(output, BLOCK_SIZE)


def application(workspace: Tile, output: Tile) -> None:
    """One block: the sum of its ``S`` partials, in order."""
    output = total(workspace, output)  # noqa: F841


def total(workspace: Tile, output: Tile) -> Tile:
    """The float32 sum of the partials ``workspace[0] + workspace[1] + ...``."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for split in range(workspace.shape[0]):
        accumulator += workspace[split]
    return accumulator


def addmm_arrangement(
    workspace: Tensor,
    input: Tensor,
    beta: Tensor,
    alpha: Tensor,
    output: Tensor,
    BLOCK_SIZE: Symbol = BLOCK_SIZE,
) -> tuple[Tensor, ...]:
    """:func:`arrangement`, with ``input`` broadcast to the output in the same blocks."""
    parts, output_arranged = arrangement(workspace, output, BLOCK_SIZE)
    input_arranged = flat_blocks(input.expand_as(output), BLOCK_SIZE)
    return parts, input_arranged, beta, alpha, output_arranged


def addmm_application(workspace: Tile, input: Tile, beta: Tile, alpha: Tile, output: Tile) -> None:
    """One block: ``beta * input + alpha * sum``, as ``addmm``'s epilogue."""
    product = total(workspace, output)
    output = beta * ntl.cast(input, ntl.float32) + alpha * product  # noqa: F841


def premake(ndim: int = 2, input_pattern: Pattern | None = None) -> Premade:
    """The kernel for an ``ndim``-D output (and an ``ndim + 1``-D workspace); with
    ``input_pattern``, ``addmm``'s epilogue for an ``input`` of that broadcast pattern."""
    workspace, output = Tensor(ndim + 1), Tensor(ndim)
    if input_pattern is None:
        return Premade(arrangement, application, (workspace, output))
    tensors = (workspace, Tensor(shape=input_pattern), Tensor(0), Tensor(0), output)
    return Premade(addmm_arrangement, addmm_application, tensors, name="split_sum_addmm")
