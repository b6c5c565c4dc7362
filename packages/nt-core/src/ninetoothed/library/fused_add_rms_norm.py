"""``fused_add_rms_norm``: ``sum = input + residual``, then ``rms_norm(sum) * weight``,
in one pass (a transformer block's residual connection and the next norm).

One row per program: the two rows are read once, their sum is written once
(rounded to the tensors' dtype, and normalised as rounded, like the unfused
pair of ops), and the normalised row is written once.  It reuses rms_norm's
:func:`~ninetoothed.library.rms_norm.normalize`.
"""

from __future__ import annotations

import ninetoothed.language as ntl
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.rms_norm import normalize
from ninetoothed.library.tiling import Premade, Tile, constexpr_at, row_vector, rows

__all__ = ["application", "arrangement", "premake"]


def arrangement(
    input: Tensor, residual: Tensor, weight: Tensor, eps: Tensor, output: Tensor, sum: Tensor
) -> tuple[Tensor, ...]:
    """Rows of every tensor but ``weight``, which every row gets whole."""
    return (
        rows(input),
        rows(residual),
        row_vector(weight, rows(input)),
        eps,
        rows(output),
        rows(sum),
    )


def application(
    input: Tile, residual: Tile, weight: Tile, eps: Tile, output: Tile, sum: Tile
) -> None:
    """One row: store the sum, then its normalised, weighted value."""
    total = (ntl.cast(input, ntl.float32) + ntl.cast(residual, ntl.float32)).to(input.dtype)
    sum = total  # noqa: F841
    output = normalize(ntl.cast(total, ntl.float32), input.source.shape[-1], eps) * weight  # noqa: F841


def premake(ndim: int, num_warps: int = 4) -> Premade:
    """The kernel for ``ndim``-D tensors, with ``num_warps`` warps."""
    row_tensors = [Tensor(ndim, shape_options=constexpr_at(ndim)) for _ in range(4)]
    weight = Tensor(1, shape_options={"constexpr": True})
    input, residual, output, sum = row_tensors
    tensors = (input, residual, weight, Tensor(0), output, sum)
    return Premade(arrangement, application, tensors, {"num_warps": num_warps})
