"""The index arithmetic of ``tile``, ``flatten`` and ``pad``, apart from :class:`Tensor`.

:mod:`ninetoothed.arrangement.tensor` checks a meta-operation's arguments and assembles the
new tensor; the functions here compute what replaces the old dimensions: how
many tiles fit a dimension, the bindings of dimensions merged into one, and
the dimensions and bindings of a padded (or cropped) level.  See the table of
bindings in :mod:`ninetoothed.arrangement.tensor`'s docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ninetoothed.arrangement._checks import check_size, is_literal
from ninetoothed.arrangement.mapping import Binding, Dim, fresh_variable
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import MetaOperationError

__all__ = ["flatten_range", "merged_bindings", "padded_dims", "pairs_from_flat", "tile_count"]


def tile_count(
    name: str,
    index: int,
    dim: Dim,
    tile_size: SymbolLike,
    stride: SymbolLike,
    spacing: SymbolLike,
    floor_mode: bool,
) -> SymbolLike:
    """How many tiles ``tile`` makes along ``dim`` of tensor ``name`` (the last may stick
    out unless floored)."""
    span = spacing * (tile_size - 1)
    if floor_mode:
        count = (dim.size - span - 1) // stride + 1
    else:
        count = (dim.size - span - 1 + stride - 1) // stride + 1
    if isinstance(count, int) and count <= 0 and isinstance(dim.size, int):
        if dim.size > 0:
            raise MetaOperationError(
                f"tile on {name}: a tile of size {tile_size} (dilation {spacing}) does not "
                f"fit dimension {index} of size {dim.size} even once with stride {stride}"
            )
        count = 0
    return count


def flatten_range(
    name: str, ndim: int, start_dim: int | None, end_dim: int | None
) -> tuple[int, int]:
    """The dimensions ``flatten`` merges, ``[start, stop)``, checked (``end_dim`` is
    exclusive)."""
    start, stop, _ = slice(start_dim, end_dim).indices(ndim)
    if start_dim is not None and not -ndim <= start_dim <= ndim:
        raise MetaOperationError(
            f"flatten on {name}: start_dim {start_dim} is out of range for {ndim} dimensions"
        )
    if end_dim is not None and not -ndim <= end_dim <= ndim:
        raise MetaOperationError(
            f"flatten on {name}: end_dim {end_dim} is out of range for {ndim} dimensions"
        )
    if stop <= start:
        raise MetaOperationError(
            f"flatten on {name}: start_dim {start_dim} must come before end_dim {end_dim} "
            f"(exclusive) among {ndim} dimensions"
        )
    return start, stop


def merged_bindings(merged: Sequence[Dim], new: Dim) -> dict[str, Binding]:
    """The bindings of dimensions merged into ``new``, row-major: the last varies fastest
    (``old = new // (product of later sizes) % size``)."""
    bindings = {}
    inner_size: SymbolLike = 1
    for position in range(len(merged) - 1, -1, -1):
        dim = merged[position]
        expression = Symbol(new.variable) // inner_size
        if position > 0:
            expression = expression % dim.size
        bindings[dim.variable] = Binding(expression, None)
        inner_size = inner_size * dim.size
    return bindings


def pairs_from_flat(padding: tuple[Any, ...], ndim: int, name: str) -> tuple[Any, ...]:
    """``padding`` as one ``(before, after)`` pair per dimension.

    A flat sequence of amounts (no pairs) is ``torch.nn.functional.pad``'s form:
    the last dimension's pair first; dimensions it does not reach get ``(0, 0)``.
    Pairs are returned as given.
    """
    if not padding or any(isinstance(amount, (tuple, list)) for amount in padding):
        return padding
    if len(padding) % 2 or len(padding) > 2 * ndim:
        raise MetaOperationError(
            f"pad on {name}: a flat padding (torch.nn.functional.pad's form: before and "
            f"after of the last dimension first) needs an even number of amounts, at most "
            f"{2 * ndim} for {ndim} dimension(s), got {len(padding)}: {padding!r}"
        )
    pairs: list[Any] = [(0, 0)] * ndim
    for index in range(len(padding) // 2):
        pairs[ndim - 1 - index] = (padding[2 * index], padding[2 * index + 1])
    return tuple(pairs)


def padded_dims(
    name: str, dims: Sequence[Dim], padding: Sequence[Any], bindings: dict[str, Binding]
) -> tuple[Dim, ...]:
    """The dimensions of tensor ``name``'s level ``dims`` padded by ``padding[i] =
    (before, after)`` (negative amounts crop); the replaced dimensions' bindings are
    added to ``bindings``."""
    result: list[Dim] = []
    for index, (dim, pair) in enumerate(zip(dims, padding)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise MetaOperationError(
                f"pad on {name}: padding[{index}] must be a (before, after) pair (or give "
                f"torch.nn.functional.pad's flat form, amounts only), got {pair!r}"
            )
        before, after = pair
        check_size(before, "padding", index, negative=True)
        check_size(after, "padding", index, negative=True)
        if is_literal(before, 0) and is_literal(after, 0):
            result.append(dim)
            continue
        size = dim.size + before + after
        if isinstance(size, int) and size < 0:
            raise MetaOperationError(
                f"pad on {name}: padding[{index}] = {pair!r} crops more than the "
                f"{dim.size} elements of dimension {index}"
            )
        new = Dim(fresh_variable(), size)
        # The padded extent, not the source size, bounds the walk: an unpadded
        # parameter read at the same index may be longer (sliced: ties nothing).
        bindings[dim.variable] = Binding(
            Symbol(new.variable) - before, dim.size, may_be_negative=True, sliced=True
        )
        result.append(new)
    return tuple(result)
