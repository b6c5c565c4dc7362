"""Which jagged parameters must share their offsets in a call.

Jagged tensors' semantics are in :mod:`ninetoothed.arrangement._jagged`;
this is the part that reads the whole kernel (the grid, the agreements and
every parameter's levels), derived once per kernel
(:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.jagged_groups`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ninetoothed.arrangement.symbol import SymbolLike, names_of
from ninetoothed.spec._agreement import Agreement
from ninetoothed.spec.parameter import Parameter

__all__ = ["offset_groups"]


def offset_groups(
    tensors: Sequence[Parameter],
    grid: Sequence[SymbolLike],
    agreements: Sequence[Agreement],
) -> tuple[tuple[str, ...], ...]:
    """The jagged parameters of ``tensors`` (tensor parameters, in order) grouped by
    the offsets they must share in a call (see :mod:`ninetoothed.arrangement._jagged`), by name.

    Two are grouped when both jagged sizes appear in the grid or an outermost
    shape, when an agreement ties their jagged dimensions, or when one's
    jagged size appears in a level of the other's below the grid.  A parameter alone in its
    group may have offsets of its own.
    """
    dims = {
        index: parameter.source.jagged_dim
        for index, parameter in enumerate(tensors)
        if parameter.source.jagged_dim is not None
    }
    jagged = {index: tensors[index].source.size_string(dim) for index, dim in dims.items()}
    group = {index: index for index in jagged}

    def root(index: int) -> int:
        while group[index] != index:
            index = group[index]
        return index

    def join(indices: Sequence[int]) -> None:
        for index in indices[1:]:
            group[root(index)] = root(indices[0])

    outermost = set(names_of(tuple(grid)))
    for parameter in tensors:
        outermost |= names_of(tuple(parameter.arranged.shape)).keys()
    join([index for index, size in jagged.items() if size in outermost])
    for index, size in jagged.items():
        for other in jagged:
            levels = tensors[other].arranged.levels()[1:]  # the outermost: just above
            if other != index and any(size in names_of(tuple(lv.shape)) for lv in levels):
                join([index, other])
    for agreement in agreements:
        join([t for t, dim in agreement.dims if dims.get(t) == dim])
    members: dict[int, list[str]] = {}
    for index in jagged:
        members.setdefault(root(index), []).append(tensors[index].name)
    return tuple(tuple(names) for names in members.values())
