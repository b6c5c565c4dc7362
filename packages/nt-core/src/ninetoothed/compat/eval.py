"""Upstream NineToothed's ``eval`` and ``subs``: arrangements as arrays of source indices.

:func:`eval` answers the question :func:`ninetoothed.evaluate` answers, in the
form upstream programs expect: one numpy array whose shape is every level's
shape, outermost first, holding for each element the flat (row-major) index of
the source element it reads, or ``-1`` where the element is masked.  The
source is assumed contiguous: the index is a position in the source's shape,
not a memory offset.

:func:`subs` gives symbols values and returns the arrangement rebuilt with
them, so that its shapes are concrete and ``eval()`` needs no arguments.

Both take upstream's substitution mapping: a tensor maps to its concrete shape
(``{x: {"shape": (5, 6)}}`` or ``{x: Tensor(shape=(5, 6))}``), a symbol to its
value (``{block_size_m: 2}``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

from ninetoothed._lazy_numpy import np
from ninetoothed.arrangement._levels import TensorLevels
from ninetoothed.arrangement.mapping import Binding, Dim, Requirement
from ninetoothed.arrangement.reference import evaluate
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import ArrangementError

__all__ = ["eval", "subs"]

_Arranged = TypeVar("_Arranged", bound=TensorLevels)

Substitutions = Mapping[Any, Any]
"""``{Tensor: {"shape": sizes} | Tensor, Symbol: int}``, as upstream spells it."""


def eval(tensor: TensorLevels, subs: Substitutions | None = None) -> np.ndarray:
    """The source index each element of ``tensor`` reads, as a numpy array.

    The array's shape is the concatenation of the shapes of all levels of
    ``tensor``, outermost first; each entry is the row-major flat index of the
    source element read there, or ``-1`` where the element is masked (outside
    the source, in a ragged tile's padding, or in ``pad``'s padding).  A
    scalar (``Tensor(0)``) evaluates to ``array(0)``.

    ``subs`` gives the symbols their values (see :func:`subs`); without it,
    every size the arrangement uses must already be concrete.
    """
    source = tensor.source
    if source.ndim == 0:
        return np.array(0, dtype=np.intp)
    values = symbol_values(subs)
    shape = tuple(
        _concrete(size, values, f"size {dim} of {source.name}")
        for dim, size in enumerate(source.shape)
    )
    evaluation = evaluate(tensor, shape, values)
    strides = np.asarray(_row_major_strides(shape), dtype=np.intp)
    flat = np.tensordot(evaluation.indices.astype(np.intp), strides, axes=([-1], [0]))
    return np.where(evaluation.mask, flat, -1).astype(np.intp)


def subs(tensor: _Arranged, subs: Substitutions) -> _Arranged:
    """``tensor`` with the symbols ``subs`` names replaced by their values.

    The result is the same arrangement, rebuilt from a source tensor of the
    same name whose sizes are the values given; sizes, tile shapes and index
    expressions fold to integers wherever all their symbols have values.
    """
    values = symbol_values(subs)
    rebuilt: dict[int, Any] = {}
    source = _rebuild(tensor.source, values, rebuilt, None)
    return _rebuild(tensor, values, rebuilt, source)


def symbol_values(subs: Substitutions | None) -> dict[str, int]:
    """Upstream's substitution mapping as values of named symbols."""
    values: dict[str, int] = {}
    for key, value in (subs or {}).items():
        if isinstance(key, TensorLevels):
            values.update(_size_values(key.source, value))
        elif isinstance(key, Symbol) and key.name is not None:
            values[key.name] = _integer(value, f"the value of {key.name}")
        else:
            raise TypeError(
                f"subs: keys must be tensors or named symbols, got {type(key).__name__} {key!r}"
            )
    return values


def _size_values(source: TensorLevels, value: Any) -> dict[str, int]:
    if isinstance(value, TensorLevels):
        shape = value.shape
    elif isinstance(value, Mapping) and "shape" in value:
        shape = value["shape"]
    else:
        raise TypeError(
            f"subs: {source.name} maps to {value!r}; give its shape as {{'shape': (...)}} "
            "or a Tensor of concrete shape"
        )
    shape = tuple(shape)
    if len(shape) != source.ndim:
        raise ArrangementError(
            f"subs: {source.name} has {source.ndim} dimensions, got the shape {shape}"
        )
    values: dict[str, int] = {}
    for dim, (declared, size) in enumerate(zip(source.shape, shape)):
        size = _integer(size, f"size {dim} of {source.name}")
        if isinstance(declared, Symbol) and declared.name is not None:
            values[declared.name] = size
        elif isinstance(declared, Symbol) or declared != size:
            raise ArrangementError(
                f"subs: dimension {dim} of {source.name} has size {declared}, got {size}"
            )
    return values


def _integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"subs: {what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _concrete(size: SymbolLike, values: Mapping[str, int], what: str) -> int:
    if isinstance(size, int):
        return size
    missing = size.names() - values.keys()
    if missing:
        raise ArrangementError(
            f"eval: {what} is {size}; give {', '.join(sorted(missing))} a value in subs"
        )
    return int(size.evaluate(values))


def _row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[dim + 1 :]) for dim in range(len(shape)))


def _substituted(value: Any, values: Mapping[str, int]) -> Any:
    return value.substitute(values) if isinstance(value, Symbol) else value


def _rebuild(
    level: _Arranged,
    values: Mapping[str, int],
    rebuilt: dict[int, Any],
    source: _Arranged | None,
) -> _Arranged:
    """A copy of ``level`` (and the levels below it) with ``values`` substituted."""
    if id(level) in rebuilt:
        done: _Arranged = rebuilt[id(level)]  # the copy of this very level
        return done
    copy = object.__new__(type(level))
    rebuilt[id(level)] = copy
    copy.__dict__.update(level.__dict__)
    copy._dims = tuple(Dim(dim.variable, _substituted(dim.size, values)) for dim in level._dims)
    copy._strides = tuple(_substituted(stride, values) for stride in level._strides)
    copy._bindings = {
        variable: Binding(
            _substituted(binding.expression, values),
            _substituted(binding.bound, values),
            binding.may_be_negative,
        )
        for variable, binding in level._bindings.items()
    }
    copy._requirements = {
        key: Requirement(
            _substituted(requirement.size, values), requirement.message, requirement.allowed
        )
        for key, requirement in level._requirements.items()
    }
    copy._source = copy if source is None else source
    if isinstance(level._dtype, TensorLevels):
        copy._dtype = _rebuild(level._dtype, values, rebuilt, copy._source)
    return copy
