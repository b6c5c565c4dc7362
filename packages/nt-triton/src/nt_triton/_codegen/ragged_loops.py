"""Loops over tiles, split into whole tiles (unmasked) and a ragged tail (masked).

A serial loop ``for i in range(start, stop)`` whose body reads ``x[i]``, a
tile of a dimension of size ``n`` cut into tiles of ``t``, checks every
element ``i * t + inner < n``: only the last tile can stick out, yet every
iteration pays the mask, and a masked load is one Triton neither vectorises
nor pipelines as well (FlashAttention's key loop, a product's reduction over
``K``).  While ``i < n // t`` every tile is whole, so such a loop becomes::

    split = tl.minimum(stop, n // t)   # the smallest over the checks dropped
    for i in range(start, split):      # the body without those checks
        ...
    for i in range(tl.maximum(start, split), stop):  # the body as written
        ...

The same iterations run in the same order, so the result is the loop's.  The
tail holds at most the one ragged tile (the application's subscripts are
trusted to stay within their level, as everywhere).  Where compile-time
conditions say whether every ``t`` divides its ``n`` (the size alignments of
:mod:`~nt_triton._codegen.divisibility`, constexpr sizes), the clamp and the
tail sit under a constexpr ``if`` on their negation: a divisible call
compiles the first loop alone, over ``range(start, stop)`` as written.

Split: ``for`` loops over ``range``/``tl.range`` with at most two positional
arguments, no ``else``, a plain loop variable the body never assigns, and at
least one tile check (of a ``tile`` whose step is its size, see
:attr:`ninetoothed.arrangement.mapping.Binding.divisor`; not jagged) indexed
by the loop variable itself.  The tail's copy of the body is not counted
again in the tile footprint tuning reads: it never runs beside the first.
``NINETOOTHED_SPLIT_LOOPS=0`` (:func:`nt_triton.knobs.split_loops`) keeps every
loop as written, to compare the two forms.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import TypeVar

from ninetoothed.arrangement.symbol import SymbolLike
from nt_triton import knobs
from nt_triton._codegen import inline
from nt_triton._codegen.context import Context, WholeTiles
from nt_triton._codegen.syntax import assign, call

__all__ = ["split", "whole_tiles"]

_Code = TypeVar("_Code", ast.expr, list[ast.stmt])

_RANGES = {"range", "tl.range", "triton.language.range"}
"""Loop iterables whose first two arguments are the start and the stop."""


def whole_tiles(context: Context, outer: SymbolLike | None) -> list[WholeTiles] | None:
    """Where to note a tile check that iterations over whole tiles drop, when ``outer``
    (a tile's index) is the variable of a loop rewritten for them; else None."""
    node = None if outer is None else context.placed(outer)
    if not isinstance(node, ast.Name):
        return None
    return context.whole_tiles.get(node.id)


def split(
    context: Context,
    loop: ast.For,
    rewrite: Callable[[ast.For], ast.stmt],
    fresh: Callable[[str], str],
) -> ast.stmt | list[ast.stmt]:
    """``loop`` rewritten by ``rewrite`` (its iterable already rewritten); split in two
    where its body reads tiles that only its last iterations may find ragged."""
    bounds = _range(loop) if knobs.split_loops() else None
    if bounds is None:
        return rewrite(loop)
    variable = loop.target
    assert isinstance(variable, ast.Name)
    pristine = _copy(loop.body)
    dropped: list[WholeTiles] = []
    context.whole_tiles[variable.id] = dropped
    try:
        whole = rewrite(loop)
    finally:
        del context.whole_tiles[variable.id]
    if not dropped:
        return whole
    assert isinstance(whole, ast.For)
    statements: list[ast.stmt] = []
    start, stop = (_named(bound, fresh, statements) for bound in bounds)
    split_name = fresh("ninetoothed_whole_tiles")
    clamp = assign(split_name, _clamped(context, stop, dropped))
    whole.iter = _iterable(loop.iter, start, ast.Name(split_name, ast.Load()))
    mark = context.footprint_mark()
    tail = rewrite(ast.For(_copy(variable), loop.iter, pristine, [], lineno=0))
    context.forget_footprint(mark)
    assert isinstance(tail, ast.For)
    tail.iter = _iterable(
        loop.iter, call("tl.maximum", [start, ast.Name(split_name, ast.Load())]), stop
    )
    ragged = _ragged(context, dropped)
    if ragged is None:
        return [*statements, clamp, whole, tail]
    # Divisible: one loop over range(start, stop), as written (no clamp, no tail).
    statements.append(assign(split_name, _copy(stop)))
    statements.append(ast.If(ragged, [clamp], []))
    return [*statements, whole, ast.If(_copy(ragged), [tail], [])]


def _range(loop: ast.For) -> tuple[ast.expr, ast.expr] | None:
    """The start and stop of a loop the module splits (see there), or None."""
    iterable = loop.iter
    if (
        loop.orelse
        or not isinstance(loop.target, ast.Name)
        or not isinstance(iterable, ast.Call)
        or ast.unparse(iterable.func) not in _RANGES
        or not 1 <= len(iterable.args) <= 2
        or any(isinstance(a, ast.Starred) for a in iterable.args)
        or any(k.arg is None or k.arg in ("step", "arg3") for k in iterable.keywords)
    ):
        return None
    name = loop.target.id
    if any(
        isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
        for statement in loop.body
        for node in ast.walk(statement)
    ):
        return None  # the body (or a loop inside it) assigns the variable
    if len(iterable.args) == 1:
        return ast.Constant(0), iterable.args[0]
    return iterable.args[0], iterable.args[1]


def _named(bound: ast.expr, fresh: Callable[[str], str], statements: list[ast.stmt]) -> ast.expr:
    """``bound``, evaluated once: a name or literal as it is, else a fresh local's."""
    if isinstance(bound, (ast.Name, ast.Constant)):
        return bound
    name = fresh("ninetoothed_bound")
    statements.append(assign(name, bound))
    return ast.Name(name, ast.Load())


def _clamped(context: Context, stop: ast.expr, dropped: list[WholeTiles]) -> ast.expr:
    """``stop``, lowered to the number of whole tiles of every check dropped."""
    result = _copy(stop)
    seen: set[tuple[str, str]] = set()
    for check in dropped:
        key = (str(check.size), str(check.tile))
        if key not in seen:
            seen.add(key)
            result = call("tl.minimum", [result, context.code(check.size // check.tile)])
    return result


def _ragged(context: Context, dropped: list[WholeTiles]) -> ast.expr | None:
    """The compile-time condition that some dropped check's tile does not divide its
    size, or None when one of them has no compile-time condition."""
    conditions: list[ast.expr] = []
    for check in dropped:
        if check.divisible is None:
            return None
        condition = context.code(check.divisible)
        if all(ast.unparse(condition) != ast.unparse(c) for c in conditions):
            conditions.append(condition)
    divisible = conditions[0]
    for condition in conditions[1:]:
        divisible = ast.BinOp(divisible, ast.BitAnd(), condition)
    return ast.UnaryOp(ast.Not(), divisible)


def _iterable(original: ast.expr, start: ast.expr, stop: ast.expr) -> ast.Call:
    """``original`` (a ``range`` call) over ``start`` to ``stop``, its keywords kept."""
    assert isinstance(original, ast.Call)
    keywords = [ast.keyword(k.arg, _copy(k.value)) for k in original.keywords]
    return ast.Call(_copy(original.func), [_copy(start), stop], keywords)


def _copy(code: _Code) -> _Code:
    """A copy of code that shares its names' namespaces (module dictionaries, which
    hold modules that cannot be copied; see :data:`inline.GLOBALS_ATTRIBUTE`)."""
    memo: dict[int, object] = {}
    for statement in code if isinstance(code, list) else [code]:
        for node in ast.walk(statement):
            namespace = getattr(node, inline.GLOBALS_ATTRIBUTE, None)
            if namespace is not None:
                memo[id(namespace)] = namespace
    return copy.deepcopy(code, memo)
