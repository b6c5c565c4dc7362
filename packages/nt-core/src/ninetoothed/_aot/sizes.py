"""Sizes in a C library are run-time values: constexpr sizes become run-time sizes.

A size declared constexpr (``Tensor(2, shape_options={"constexpr": True})``)
is compiled into a just-in-time kernel per call, which a library cannot do.
A library compiles it as a run-time size instead, and so serves every size:
index arithmetic divides by the size rather than by a constant.  Where a
tile takes such a dimension whole, its padded size is still a constant of
the compiled kernel: the builder compiles one kernel per power of two up to
the size's ``upper_bound`` (or for the sizes a variant names).
:func:`run_time_sizes` makes the tensors ``make`` and ``build`` arrange.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.arrangement.tensor import Tensor

__all__ = ["run_time_sizes"]


def run_time_sizes(
    tensors: Sequence[Any],
    upper_bound: int | None = None,
    dtype: Any = None,
    bounds: Mapping[tuple[int, int], int] | None = None,
    keep: Collection[tuple[int, int]] = (),
) -> tuple[Any, ...]:
    """``tensors`` with each size declared constexpr made a run-time size (a new tensor
    of the same name, dtype, ``other`` and bounds; other items as they are), except
    the sizes ``keep`` names as ``(position in tensors, dim)``: a variant compiled for
    their exact value.  ``bounds`` gives the upper bound of a size, replacing its own;
    ``upper_bound`` bounds the others that have none; ``dtype`` is given to the tensors
    (not scalars) that declare none."""
    given = bounds or {}
    return tuple(
        _relaxed(
            t,
            upper_bound,
            dtype,
            {d: b for (i, d), b in given.items() if i == index},
            {d for i, d in keep if i == index},
        )
        if isinstance(t, Tensor)
        else t
        for index, t in enumerate(tensors)
    )


def _relaxed(
    tensor: Tensor,
    upper_bound: int | None,
    dtype: Any,
    bounds: Mapping[int, int],
    keep: Collection[int],
) -> Tensor:
    declare = dtype is not None and tensor.dtype is None and tensor.ndim > 0
    if not declare and not any(_constexpr(size) for size in tensor.shape):
        return tensor
    shape = [
        _run_time(size, bounds.get(dim), upper_bound)
        if _constexpr(size) and dim not in keep
        else size
        for dim, size in enumerate(tensor.shape)
    ]
    return Tensor(
        shape=shape,
        dtype=dtype if declare else tensor.dtype,
        name=tensor.name,
        other=tensor.other,
        strides=tensor.strides,
        jagged_dim=tensor.jagged_dim,
    )


def _run_time(size: Any, bound: int | None, upper_bound: int | None) -> Symbol:
    """A run-time size symbol of the constexpr ``size``'s name and lower bound, bounded
    by ``bound``, else by its own upper bound, else by ``upper_bound``."""
    if bound is None:
        bound = size.upper_bound if size.upper_bound is not None else upper_bound
    return Symbol(
        size, lower_bound=size.lower_bound, upper_bound=bound, power_of_two=size.power_of_two
    )


def _constexpr(size: object) -> bool:
    return isinstance(size, Symbol) and size.constexpr
