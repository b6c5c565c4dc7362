"""The values auto-tuning gives a meta symbol.

Powers of two within the symbol's bounds, or, for a symbol declared
``power_of_two=False`` (as upstream), every integer within them.  The tuning
space (:mod:`nt_triton._tuning`) combines them; code generation needs the
largest one, to cap a tile's alignment check
(:mod:`nt_triton._codegen.divisibility`), and must not import the space.
"""

from __future__ import annotations

from ninetoothed.arrangement.symbol import Symbol, next_power_of_two, takes_powers_of_two
from ninetoothed.errors import CodegenError

__all__ = ["DEFAULT_LOWER_BOUND", "DEFAULT_UPPER_BOUND", "symbol_values"]

DEFAULT_LOWER_BOUND = 16
DEFAULT_UPPER_BOUND = 1024
"""Bounds of a meta symbol that declares none."""


def symbol_values(symbol: Symbol) -> list[int]:
    """The values auto-tuning tries for ``symbol``: powers of two within its bounds, or
    every integer within them for a symbol declared ``power_of_two=False`` (as upstream)."""
    lower = symbol.lower_bound if symbol.lower_bound is not None else DEFAULT_LOWER_BOUND
    upper = symbol.upper_bound if symbol.upper_bound is not None else DEFAULT_UPPER_BOUND
    if not takes_powers_of_two(symbol):
        if upper < max(1, lower):
            raise CodegenError(f"meta symbol {symbol} has no positive integer up to {upper}")
        return list(range(max(1, lower), upper + 1))
    values = []
    value = next_power_of_two(max(1, lower))
    while value <= upper:
        values.append(value)
        value *= 2
    if not values:
        raise CodegenError(f"meta symbol {symbol} has no power of two between {lower} and {upper}")
    return values
