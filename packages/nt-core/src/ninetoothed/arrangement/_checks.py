"""Argument checks of the meta-operations, with errors that name what was wrong.

Every meta-operation of :class:`ninetoothed.Tensor` validates its arguments
with these before it records anything, so a bad tile shape, dimension or
padding is reported at the call that made it, naming the tensor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import MetaOperationError

__all__ = [
    "as_sequence",
    "check_length",
    "check_rank",
    "check_size",
    "is_literal",
    "is_minus_one",
    "normalize_dims",
    "normalize_index",
    "per_dim_options",
    "same_size",
]


def as_sequence(values: Any, operation: str, parameter: str) -> tuple[Any, ...]:
    """``values`` as a tuple; it must be a tuple or a list."""
    if not isinstance(values, (tuple, list)):
        raise MetaOperationError(
            f"{operation}: {parameter} must be a tuple or list, got {type(values).__name__} "
            f"{values!r}"
        )
    return tuple(values)


def check_length(
    values: Sequence[Any],
    operation: str,
    parameter: str,
    tensor: str,
    shape: tuple[SymbolLike, ...],
) -> None:
    """``values`` has one entry per dimension of a level of shape ``shape``."""
    if len(values) != len(shape):
        raise MetaOperationError(
            f"{operation} on {tensor}: {parameter} {tuple(values)} has "
            f"{len(values)} entries, but the tensor has {len(shape)} dimensions "
            f"(shape {shape})"
        )


def check_rank(ndim: int | None, shape: Sequence[Any] | None) -> int:
    """A new tensor's number of dimensions, from ``ndim`` and/or ``shape``, which must agree."""
    if shape is None and ndim is None:
        raise MetaOperationError(
            "Tensor needs ndim or shape, e.g. Tensor(2) or Tensor(shape=(4, 8))"
        )
    if shape is not None and ndim is not None and len(shape) != ndim:
        raise MetaOperationError(
            f"Tensor: ndim={ndim} disagrees with shape {tuple(shape)} of {len(shape)} dimensions"
        )
    if ndim is not None and (not isinstance(ndim, int) or ndim < 0):
        raise MetaOperationError(f"Tensor: ndim must be a non-negative int, got {ndim!r}")
    if shape is not None:
        return len(shape)
    assert ndim is not None
    return ndim


def check_size(
    value: Any, parameter: str, index: int, positive: bool = False, negative: bool = False
) -> None:
    """``value`` is a Symbol or a non-negative (``positive``: positive; ``negative``: any) int."""
    if isinstance(value, Symbol):
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise MetaOperationError(
            f"{parameter}[{index}] must be an int or a Symbol, got {type(value).__name__} {value!r}"
        )
    if negative:
        return
    if value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise MetaOperationError(f"{parameter}[{index}] must be {kind}, got {value}")


def normalize_index(dim: Any, ndim: int, operation: str, tensor: str) -> int:
    """A dimension index in ``range(ndim)``; negative ones count from the end."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise MetaOperationError(f"{operation}: dimensions must be ints, got {dim!r}")
    if not -ndim <= dim < ndim:
        raise MetaOperationError(
            f"{operation} on {tensor}: dimension {dim} is out of range for {ndim} dimensions"
        )
    return dim % ndim


def normalize_dims(dim: int | Sequence[int], ndim: int, operation: str, tensor: str) -> set[int]:
    """One dimension or several, normalised, none repeated."""
    dims = [dim] if isinstance(dim, int) else list(as_sequence(dim, operation, "dim"))
    normalized = [normalize_index(d, ndim, operation, tensor) for d in dims]
    if len(set(normalized)) != len(normalized):
        raise MetaOperationError(f"{operation}: dimension repeated in {tuple(dims)}")
    return set(normalized)


def per_dim_options(
    options: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None, ndim: int
) -> list[dict[str, Any]]:
    """``shape_options`` as one dict of Symbol options per dimension."""
    if options is None:
        return [{} for _ in range(ndim)]
    if isinstance(options, Mapping):
        return [dict(options) for _ in range(ndim)]
    options = list(options)
    if len(options) != ndim:
        raise MetaOperationError(
            f"shape_options has {len(options)} entries, but the tensor has {ndim} dimensions"
        )
    return [dict(option or {}) for option in options]


def is_literal(value: object, number: int) -> bool:
    """Whether ``value`` is the int ``number`` (not a bool, not a Symbol)."""
    return isinstance(value, int) and not isinstance(value, bool) and value == number


def is_minus_one(value: object) -> bool:
    """``-1``, which meta-operations read as "the whole dimension" or "keep it"."""
    return is_literal(value, -1)


def same_size(left: SymbolLike, right: SymbolLike) -> bool:
    """Whether two sizes are the same literal, or structurally the same symbol."""
    if isinstance(left, Symbol) or isinstance(right, Symbol):
        return isinstance(left, Symbol) and isinstance(right, Symbol) and left == right
    return left == right
