"""How each element finds its source element: the records meta-operations add.

Every dimension of every level owns a fresh *index variable*
(:func:`fresh_variable`).  A meta-operation that replaces dimensions records,
for each replaced variable, a :class:`Binding`: an expression in the new
variables plus the range the old variable must stay in.  Bindings are only
ever added and variables never reused, so the bindings of all levels of an
arranged tensor unite without conflict (:func:`unite`).  A symbolic size that
must be 1 at run time (a squeezed symbolic dimension) is a
:class:`Requirement`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ninetoothed.arrangement.symbol import SymbolLike, names_of
from ninetoothed.errors import MetaOperationError

__all__ = ["Binding", "Dim", "Requirement", "VARIABLE_PREFIX"]

_variable_ids = itertools.count()

VARIABLE_PREFIX = "ninetoothed_index_"
"""Names of index variables start with this; they never reach users' code."""


def fresh_variable() -> str:
    """A new, unique index variable name."""
    return f"{VARIABLE_PREFIX}{next(_variable_ids)}"


def fresh_requirement_key() -> str:
    """A new, unique key for a :class:`Requirement`."""
    return f"requirement_{next(_variable_ids)}"


@dataclass(frozen=True)
class Dim:
    """One dimension of one level: its index variable and its size."""

    variable: str
    size: SymbolLike


@dataclass(frozen=True)
class Binding:
    """``variable := expression``, valid while ``0 <= expression < bound``.

    ``bound`` is ``None`` when the expression stays in range by construction
    (``expand``, ``squeeze``, ``flatten``); ``may_be_negative`` says whether
    the lower bound needs checking (``pad``, negative-step slices, symbolic
    integer indices).
    """

    expression: SymbolLike
    bound: SymbolLike | None
    may_be_negative: bool = False
    sliced: bool = False
    """Made by a slice or ``pad``: the new dimension's extent, not the source size,
    bounds the walk (so :mod:`ninetoothed.spec._agreement` ties no size through it)."""
    divisor: SymbolLike | None = None
    """Set by ``tile`` with the step equal to the tile size and no dilation (not floored):
    the tile size ``t`` of ``outer * t + inner``.  With ``outer`` below its count
    ``ceil(bound / t)`` and ``inner`` below ``t``, the range holds for every element
    exactly when ``bound`` is a multiple of ``t`` (code generators may drop the check
    then)."""
    outer: str | None = None
    """With :attr:`divisor`: the variable ``outer`` of ``outer * t + inner``, so a code
    generator can tell which index picks the tile (a loop over the tiles knows that
    every index below ``bound // t`` picks a whole one)."""


@dataclass(frozen=True)
class Requirement:
    """A size that must be one of ``allowed`` at run time.

    A symbolic dimension that was squeezed or expanded must be 1, or 0 (an
    empty tensor, as upstream's programs pass: every element masked).
    """

    size: SymbolLike
    message: str
    allowed: tuple[int, ...] = (1,)


def unite(left: dict[str, Binding], right: dict[str, Binding]) -> dict[str, Binding]:
    """The bindings of ``left`` and ``right`` together.

    A variable bound two different ways means one level was rearranged twice
    and both results ended up in one tensor: an error.
    """
    result = dict(left)
    for variable, binding in right.items():
        existing = result.get(variable)
        if existing is not None and existing != binding:
            raise MetaOperationError(
                "a level was rearranged in two different ways and both results ended up in "
                "one tensor; derive each level from the tensor it belongs to"
            )
        result[variable] = binding
    return result


def is_broadcast(
    variable: str, source_variables: Iterable[str], bindings: Mapping[str, Binding]
) -> bool:
    """Whether every index of ``variable`` reads the same source element as index 0.

    So it is when no source index, its bindings substituted, depends on
    ``variable`` (a dimension made by ``expand``, or tiled from one), and no
    binding that depends on it checks a lower bound (``pad``, a negative step):
    then index 0 is masked only where every index is, as bindings grow with
    their variables.  Fixing such a variable at 0 (``squeeze``) reads what
    any index would.
    """
    dependants: dict[str, set[str]] = {}
    for name, binding in bindings.items():
        for used in names_of(binding.expression):
            dependants.setdefault(used, set()).add(name)
    reached, frontier = {variable}, [variable]
    while frontier:
        for name in dependants.get(frontier.pop(), ()):
            if name not in reached:
                reached.add(name)
                frontier.append(name)
    if any(bindings[name].may_be_negative for name in reached if name in bindings):
        return False
    return not reached.intersection(source_variables)
