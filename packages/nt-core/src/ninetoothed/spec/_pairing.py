"""Outermost levels of different ranks, paired program by program as upstream pairs them.

Upstream launches one program per tile of the first tensor's outermost level
and has every tensor unravel the program id over its own outermost shape,
row-major: program ``p`` reads tile ``p`` (counted row-major) of every
tensor.  :func:`paired_with_grid` gives an arranged tensor whose outermost
rank differs from the grid's that addressing: its outermost level becomes
the grid's shape, each new index ``g`` standing for the tile at the linear
position ``sum(g_d * stride_d)`` of its own level.  Upstream masks the tiles
of programs past a tensor's own count and leaves a longer tensor's extra
tiles untouched; here both tensors must have as many tiles as the grid, a
:class:`~ninetoothed.arrangement.mapping.Requirement` checked at launch.  ``(1, K)``
against ``(K,)``, ``(N, 1, K)`` against ``(N, K)`` (sizes 1 at launch) then
pair tile for tile.
"""

from __future__ import annotations

from ninetoothed.arrangement.mapping import (
    Binding,
    Dim,
    Requirement,
    fresh_requirement_key,
    fresh_variable,
)
from ninetoothed.arrangement.simplify import simplify
from ninetoothed.arrangement.symbol import Symbol, SymbolLike, product
from ninetoothed.arrangement.tensor import Tensor

__all__ = ["paired_with_grid"]


def paired_with_grid(name: str, arranged: Tensor, grid: tuple[SymbolLike, ...]) -> Tensor:
    """``arranged`` with its outermost level reshaped, row-major, to ``grid``.

    Returned unchanged when the tile counts are literals that differ (the
    outermost-shape check then reports it at ``make``).
    """
    difference = simplify(product(arranged.shape) - product(grid))
    if isinstance(difference, int) and difference != 0:
        return arranged
    linear = arranged
    if linear.ndim == 0:
        linear = linear.unsqueeze(0)
    elif linear.ndim > 1:
        linear = linear.flatten()
    (merged,) = linear._dims
    dims = tuple(Dim(fresh_variable(), size) for size in grid)
    position: SymbolLike = 0
    stride: SymbolLike = 1
    for dim in reversed(dims):
        position = position + Symbol(dim.variable) * stride
        stride = stride * dim.size
    bindings = {**linear._bindings, merged.variable: Binding(position, None)}
    result = linear._derive(dims, bindings, linear._dtype)
    if not (isinstance(difference, int) and difference == 0):
        requirement = Requirement(
            difference,
            f"the outermost level of {name!r} ({arranged.ndim} dimensions) is paired with the "
            f"launch grid ({len(grid)} dimensions) program by program, row-major (as upstream), "
            "so it must have as many tiles as the launch grid has programs; its tiles minus "
            "the grid's programs",
            (0,),
        )
        result._requirements = {**result._requirements, fresh_requirement_key(): requirement}
    return result
