"""The reference semantics: arrangements evaluated on concrete sizes, in numpy.

:func:`evaluate` answers, for every element of every level of an arranged
tensor, which source element it reads and whether it is masked (outside the
source, or in the padding of a ragged tile).  It needs no triton and no GPU.
The code generator's loads and stores are tested against it, and it is what a
user can inspect to debug an arrangement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ninetoothed._lazy_numpy import np
from ninetoothed.arrangement._levels import TensorLevels
from ninetoothed.arrangement.mapping import Binding
from ninetoothed.arrangement.symbol import SymbolLike, evaluate_with
from ninetoothed.errors import ArrangementError

__all__ = ["Evaluation", "concrete_values", "evaluate"]


@dataclass(frozen=True)
class Evaluation:
    """A concrete arranged tensor.

    ``level_shapes[k]`` is the concrete shape of level ``k`` (outermost first).
    ``indices`` has shape ``(*level_shapes[0], *level_shapes[1], …, source_ndim)``:
    the source index each element reads.  ``mask`` has the same shape without
    the last axis: ``False`` where the element lies outside the source (loads
    read ``other`` there, stores skip it).
    """

    level_shapes: tuple[tuple[int, ...], ...]
    indices: np.ndarray
    mask: np.ndarray

    def source_offsets(self, strides: Sequence[int]) -> np.ndarray:
        """Element offsets ``sum(index * stride)`` (meaningful where ``mask``)."""
        return np.tensordot(self.indices, np.asarray(strides, dtype=np.int64), axes=([-1], [0]))


def concrete_values(
    tensor: TensorLevels,
    source_shape: Sequence[int],
    source_strides: Sequence[int] | None = None,
    symbols: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """The values of a source tensor's size and stride symbols, plus ``symbols``."""
    source = tensor.source
    if len(source_shape) != source.ndim:
        raise ArrangementError(
            f"{source.name} has {source.ndim} dimensions, got source shape {tuple(source_shape)}"
        )
    values = dict(symbols or {})
    for dim, size in enumerate(source_shape):
        values[source.size_string(dim)] = int(size)
    if source_strides is not None:
        for dim, stride in enumerate(source_strides):
            values[source.stride_string(dim)] = int(stride)
    return values


def evaluate(
    tensor: TensorLevels,
    source_shape: Sequence[int],
    symbols: Mapping[str, int] | None = None,
) -> Evaluation:
    """Evaluate the arranged ``tensor`` for a source of shape ``source_shape``.

    ``symbols`` gives a value to every other symbol the arrangement uses (tile
    sizes and the like).
    """
    values = concrete_values(tensor, source_shape, symbols=symbols)
    levels = tensor.levels()
    dims = [dim for level in levels for dim in level.dims]
    level_shapes = tuple(
        tuple(_concrete(dim.size, values, tensor) for dim in level.dims) for level in levels
    )
    full_shape = tuple(size for shape in level_shapes for size in shape)
    for requirement in tensor.all_requirements().values():
        value = _concrete(requirement.size, values, tensor)
        if value not in requirement.allowed:
            raise ArrangementError(f"{requirement.message}, got {value}")
    bindings = tensor.all_bindings()

    lookup = _Lookup(values, bindings)
    for axis, dim in enumerate(dims):
        placement = [1] * len(full_shape)
        placement[axis] = full_shape[axis]
        lookup[dim.variable] = np.arange(full_shape[axis], dtype=np.int64).reshape(placement)

    mask = np.ones(full_shape, dtype=bool)
    for variable, binding in bindings.items():
        if binding.bound is None:
            continue
        value = lookup[variable]
        bound = _concrete(binding.bound, values, tensor)
        mask &= np.broadcast_to(value < bound, full_shape)
        if binding.may_be_negative:
            mask &= np.broadcast_to(value >= 0, full_shape)

    indices = (
        np.stack(
            [
                np.broadcast_to(np.asarray(lookup[variable], dtype=np.int64), full_shape)
                for variable in tensor.source.source_variables
            ],
            axis=-1,
        )
        if tensor.source.ndim
        else np.zeros((*full_shape, 0), dtype=np.int64)
    )
    return Evaluation(level_shapes, indices, mask)


class _Lookup(dict[str, Any]):
    """Values of symbols and index variables, resolving bound variables lazily."""

    def __init__(self, values: Mapping[str, int], bindings: Mapping[str, Binding]) -> None:
        super().__init__(values)
        self._bindings = bindings
        self._resolving: set[str] = set()

    def __missing__(self, name: str) -> object:
        binding = self._bindings.get(name)
        if binding is None:
            raise ArrangementError(
                f"no value for {name}: give it in symbols=, or check that every level of the "
                "arrangement was derived from the tensor it belongs to"
            )
        if name in self._resolving:
            raise ArrangementError(f"index variable {name} is defined in terms of itself")
        self._resolving.add(name)
        value = evaluate_with(binding.expression, self)
        self._resolving.discard(name)
        self[name] = value
        return value


def _concrete(size: SymbolLike, values: Mapping[str, int], tensor: TensorLevels) -> int:
    try:
        return int(cast(int, evaluate_with(size, values)))
    except KeyError as error:
        raise ArrangementError(
            f"cannot evaluate size {size} of {tensor.source.name}: no value for {error}; "
            "pass it in symbols="
        ) from None
