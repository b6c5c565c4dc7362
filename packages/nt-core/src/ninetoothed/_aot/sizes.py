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

from collections.abc import Sequence
from typing import Any

from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.arrangement.tensor import Tensor

__all__ = ["run_time_sizes"]


def run_time_sizes(tensors: Sequence[Any], upper_bound: int | None = None) -> tuple[Any, ...]:
    """``tensors`` with each size declared constexpr made a run-time size (a new tensor
    of the same name, dtype, ``other`` and bounds; other items as they are).
    ``upper_bound`` bounds such sizes that have no bound of their own."""
    return tuple(_relaxed(t, upper_bound) if isinstance(t, Tensor) else t for t in tensors)


def _relaxed(tensor: Tensor, upper_bound: int | None) -> Tensor:
    if not any(_constexpr(size) for size in tensor.shape):
        return tensor
    shape = [_run_time(size, upper_bound) if _constexpr(size) else size for size in tensor.shape]
    return Tensor(
        shape=shape,
        dtype=tensor.dtype,
        name=tensor.name,
        other=tensor.other,
        strides=tensor.strides,
        jagged_dim=tensor.jagged_dim,
    )


def _run_time(size: Any, upper_bound: int | None) -> Symbol:
    """A run-time size symbol of the constexpr ``size``'s name and bounds."""
    bound = size.upper_bound if size.upper_bound is not None else upper_bound
    return Symbol(
        size, lower_bound=size.lower_bound, upper_bound=bound, power_of_two=size.power_of_two
    )


def _constexpr(size: object) -> bool:
    return isinstance(size, Symbol) and size.constexpr
