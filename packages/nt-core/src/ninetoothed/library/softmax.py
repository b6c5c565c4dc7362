"""``softmax`` along one dimension: one row per program, the whole row in one tile.

The input's ``other`` is ``-inf``, so the padding of a row whose length is not
a power of two adds nothing to the maximum or to the sum.  The row is read
once, exponentiated and normalised in float32, and written once.
"""

from __future__ import annotations

import functools

import ninetoothed.language as ntl
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile, constexpr_at, rows

__all__ = ["application", "arrangement", "premake"]


def arrangement(input: Tensor, output: Tensor, dim: int = -1) -> tuple[Tensor, Tensor]:
    """Both tensors as rows along ``dim``."""
    return rows(input, dim), rows(output, dim)


def application(input: Tile, output: Tile) -> None:
    """One row: ``exp(x - max(x)) / sum(exp(x - max(x)))``."""
    row = ntl.cast(input, ntl.float32)
    numerator = ntl.exp(row - ntl.max(row))
    output = numerator / ntl.sum(numerator)  # noqa: F841


def premake(ndim: int, dim: int, num_warps: int = 4) -> Premade:
    """The kernel for ``ndim``-D tensors, softmax along ``dim``, with ``num_warps`` warps."""
    options = constexpr_at(ndim, dim)
    tensors = (
        Tensor(ndim, other=float("-inf"), shape_options=options),
        Tensor(ndim, shape_options=options),
    )
    arranged = functools.partial(arrangement, dim=dim)
    return Premade(arranged, application, tensors, {"num_warps": num_warps})
