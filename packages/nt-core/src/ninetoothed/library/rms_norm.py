"""``rms_norm`` over the last dimension: one row per program, the whole row in one tile.

The row is read once; its mean square is taken in float32, and
``x * rsqrt(mean(x**2) + eps) * weight`` is written once.  Padding reads 0,
so it adds nothing to the sum; the mean divides by the row's true length
(``input.source.shape[-1]``).  ``fused_add_rms_norm`` reuses :func:`normalize`.
"""

from __future__ import annotations

import ninetoothed.language as ntl
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile, constexpr_at, row_vector, rows

__all__ = [
    "application",
    "arrangement",
    "normalize",
    "premake",
    "unweighted_application",
    "unweighted_arrangement",
]


def arrangement(
    input: Tensor, weight: Tensor, eps: Tensor, output: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Rows of ``input`` and ``output``; the whole ``weight`` for every row."""
    return rows(input), row_vector(weight, rows(input)), eps, rows(output)


def normalize(row: Tile, length: Tile, eps: Tile) -> Tile:
    """``row * rsqrt(sum(row**2) / length + eps)``, ``row`` in float32."""
    return row * ntl.rsqrt(ntl.sum(row * row) / length + eps)


def application(input: Tile, weight: Tile, eps: Tile, output: Tile) -> None:
    """One row, normalised and scaled by the weight."""
    row = ntl.cast(input, ntl.float32)
    output = normalize(row, input.source.shape[-1], eps) * weight  # noqa: F841


def unweighted_arrangement(
    input: Tensor, eps: Tensor, output: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Rows of ``input`` and ``output``."""
    return rows(input), eps, rows(output)


def unweighted_application(input: Tile, eps: Tile, output: Tile) -> None:
    """One row, normalised (no weight)."""
    output = normalize(ntl.cast(input, ntl.float32), input.source.shape[-1], eps)  # noqa: F841


def premake(ndim: int, weighted: bool, num_warps: int = 4) -> Premade:
    """The kernel for ``ndim``-D tensors, with or without a weight, with ``num_warps`` warps."""
    input, output = (Tensor(ndim, shape_options=constexpr_at(ndim)) for _ in range(2))
    options = {"num_warps": num_warps}
    if weighted:
        weight = Tensor(1, shape_options={"constexpr": True})
        return Premade(arrangement, application, (input, weight, Tensor(0), output), options)
    tensors = (input, Tensor(0), output)
    return Premade(unweighted_arrangement, unweighted_application, tensors, options)
