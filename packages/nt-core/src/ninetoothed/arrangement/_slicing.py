"""Indexing a level with ints, slices (negative and stepped), ``None`` and ``...``.

:func:`index_level` is what ``Tensor.__getitem__`` does: it returns the new
level's dimensions and adds a binding for each indexed dimension (an int or
symbol picks one index; a slice maps ``start + new * step``).  Sizes and
bounds may be symbolic.
"""

from __future__ import annotations

from typing import Any

from ninetoothed.arrangement.mapping import Binding, Dim, fresh_variable
from ninetoothed.arrangement.symbol import Symbol, SymbolLike, ceil_div
from ninetoothed.errors import MetaOperationError

__all__ = ["index_level"]


def index_level(
    tensor: str, dims: tuple[Dim, ...], key: Any, bindings: dict[str, Binding]
) -> tuple[Dim, ...]:
    """The dimensions of ``level[key]``, adding the bindings it makes to ``bindings``."""
    items = _expand(tensor, len(dims), key)
    result: list[Dim] = []
    source_dims = iter(enumerate(dims))
    for item in items:
        if item is None:
            result.append(Dim(fresh_variable(), 1))
            continue
        index, dim = next(source_dims)
        if isinstance(item, slice):
            result.append(_slice(tensor, index, dim, item, bindings))
        elif isinstance(item, (int, Symbol)) and not isinstance(item, bool):
            bindings[dim.variable] = _integer_index(tensor, index, dim, item)
        else:
            raise MetaOperationError(f"cannot index {tensor} with {type(item).__name__} {item!r}")
    return tuple(result)


def _expand(tensor: str, ndim: int, key: Any) -> list[Any]:
    """The key as one item per dimension (plus ``None`` items), ``...`` expanded."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(item is Ellipsis for item in items) > 1:
        raise MetaOperationError(f"an index of {tensor} can only have a single ellipsis ('...')")
    consuming = sum(item is not None and item is not Ellipsis for item in items)
    if consuming > ndim:
        raise MetaOperationError(
            f"too many indices for {tensor}: {consuming} given, {ndim} dimensions"
        )
    if Ellipsis in items:
        position = items.index(Ellipsis)
        items[position : position + 1] = [slice(None)] * (ndim - consuming)
    else:
        items += [slice(None)] * (ndim - consuming)
    return items


def _integer_index(tensor: str, index: int, dim: Dim, item: SymbolLike) -> Binding:
    if isinstance(item, int):
        if isinstance(dim.size, int) and not -dim.size <= item < dim.size:
            raise MetaOperationError(
                f"index {item} is out of range for dimension {index} of "
                f"{tensor} with size {dim.size}"
            )
        if item < 0:
            return Binding(dim.size + item, dim.size, may_be_negative=True)
        return Binding(item, dim.size)
    return Binding(item, dim.size, may_be_negative=True)


def _slice(tensor: str, index: int, dim: Dim, item: slice, bindings: dict[str, Binding]) -> Dim:
    step = 1 if item.step is None else item.step
    if not isinstance(step, int) or step == 0:
        raise MetaOperationError(
            f"slice step for dimension {index} of {tensor} must be a non-zero "
            f"int, got {item.step!r}"
        )
    start: SymbolLike
    if isinstance(dim.size, int) and all(
        isinstance(v, (int, type(None))) for v in (item.start, item.stop)
    ):
        start, stop, step = item.indices(dim.size)
        size: SymbolLike = len(range(start, stop, step))
    else:
        start, size = _symbolic_slice(dim.size, item.start, item.stop, step)
    new = Dim(fresh_variable(), size)
    bindings[dim.variable] = Binding(
        start + Symbol(new.variable) * step,
        dim.size,
        may_be_negative=step < 0 or isinstance(start, Symbol),
        sliced=True,
    )
    return new


def _symbolic_slice(
    size: SymbolLike, start: SymbolLike | None, stop: SymbolLike | None, step: int
) -> tuple[SymbolLike, SymbolLike]:
    """Start and length of ``range(size)[start:stop:step]`` with symbolic parts.

    In-range bounds are assumed where they cannot be checked.
    """

    def normalize(value: SymbolLike) -> SymbolLike:
        return size + value if isinstance(value, int) and value < 0 else value

    if step > 0:
        first = 0 if start is None else normalize(start)
        end = size if stop is None else normalize(stop)
        return first, ceil_div(end - first, step)
    first = size - 1 if start is None else normalize(start)
    if stop is None:
        return first, ceil_div(first + 1, -step)
    return first, ceil_div(first - normalize(stop), -step)
