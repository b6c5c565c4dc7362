"""Hoisted loads: each tile's pointers, mask and value as named statements.

:class:`HoistedLoads` is the part of the application's rewriter that turns a
tile reference into a load or a store: in a straight-line stretch it names each
tile's pointers and mask (``x_pointers_N``, ``x_mask_N``) and its value
(``x_tile_N``) once, before the statement that needs them, and reuses them until
a store to that parameter makes the value stale.  A tile loaded once along some
of its dimensions (:class:`~nt_triton._codegen.memory.Spread`) names its parts
instead (and ``x_keep_N``); the whole tile's pointers and mask, which a store
needs, are made of them.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

from nt_triton._codegen import memory, naming
from nt_triton._codegen.context import Context
from nt_triton._codegen.geometry import tile_shape
from nt_triton._codegen.memory import PointersAndMask, Spread
from nt_triton._codegen.syntax import assign, call
from nt_triton._codegen.views import View

__all__ = ["HoistedLoads", "view_key"]


class HoistedLoads:
    """Loads and stores of tiles, hoisted into named statements where the rewriter is
    hoisting (see the module's docstring)."""

    context: Context
    local: set[str]
    prelude: list[ast.stmt]
    """Statements to place before the statement being rewritten."""
    hoisting: bool
    branching: bool
    loop_depth: int
    cache: dict[tuple[Any, ...], dict[str, ast.expr]]
    """Per tile (:func:`view_key`), its hoisted names."""
    counter: itertools.count[int]

    def fresh(self, stem: str) -> str:
        """A new local name, ``stem_N``, not clashing with the application's."""
        while True:
            name = naming.numbered(stem, next(self.counter))
            if name not in self.local:
                self.local.add(name)
                return name

    def addressing(self, view: View) -> PointersAndMask:
        """Pointers and mask of a tile, hoisted into named statements when possible."""
        return self.addressed(view)[0]

    def addressed(self, view: View) -> tuple[PointersAndMask, Spread | None]:
        """Pointers and mask of a tile, and how to load it once along the dimensions its
        pointers do not vary in (:class:`~nt_triton._codegen.memory.Spread`), hoisted
        into named statements when possible."""
        key = view_key(view)
        if self.hoisting and key in self.cache and naming.POINTERS in self.cache[key]:
            entry = self.cache[key]
            return (entry[naming.POINTERS], entry.get(naming.MASK)), _cached_spread(entry)
        (pointers, mask), spread = memory.address(self.context, view)
        if not self.hoisting:
            return (pointers, mask), spread
        stem = view.parameter.name
        entry = self.cache.setdefault(key, {})
        if spread is not None:
            # The spread's parts are named; the whole tile's pointers and mask (a
            # store's) are made of them, so neither is computed twice.
            spread = spread._replace(
                pointers=self.hoist(stem, naming.POINTERS, spread.pointers),
                mask=spread.mask and self.hoist(stem, naming.MASK, spread.mask),
                keep=spread.keep and self.hoist(stem, naming.KEEP, spread.keep),
            )
            entry.update({_SPREAD_POINTERS: spread.pointers, _SPREAD_SHAPE: spread.shape})
            entry.update({_SPREAD_MASK: spread.mask} if spread.mask else {})
            entry.update({_SPREAD_KEEP: spread.keep} if spread.keep else {})
            entry[naming.POINTERS] = call("tl.broadcast_to", [spread.pointers, spread.shape])
            masks = [part for part in (spread.mask, spread.keep) if part is not None]
            if masks:
                entry[naming.MASK] = (
                    masks[0] if len(masks) == 1 else ast.BinOp(masks[0], ast.BitAnd(), masks[1])
                )
            return (entry[naming.POINTERS], entry.get(naming.MASK)), spread
        entry[naming.POINTERS] = self.hoist(stem, naming.POINTERS, pointers)
        if mask is not None:
            entry[naming.MASK] = self.hoist(stem, naming.MASK, mask)
        return (entry[naming.POINTERS], entry.get(naming.MASK)), None

    def hoist(self, stem: str, part: str, value: ast.expr) -> ast.Name:
        """``value`` assigned to a fresh name (``x_<part>_N``) before the statement."""
        name = self.fresh(naming.hoisted(stem, part))
        self.prelude.append(assign(name, value))
        return ast.Name(name, ast.Load())

    def load(self, view: View) -> ast.expr:
        """A tile's value: loaded once per straight-line stretch without stores."""
        key = view_key(view)
        if self.hoisting and naming.TILE in self.cache.get(key, {}):
            return self.cache[key][naming.TILE]
        if view.parameter.name in self.context.stored and (self.hoisting or self.branching):
            # Reading back what this program stored: other threads of the
            # program may have written those elements, so wait for them.
            self.prelude.append(ast.Expr(call("tl.debug_barrier", [])))
        if self.loop_depth:
            self.context.loop_tiles.append((tile_shape(self.context, view), self.context.loop))
        where, spread = self.addressed(view)
        load = memory.load(self.context, view, where, spread)
        if not self.hoisting:
            return load
        name = self.fresh(naming.hoisted(view.parameter.name, naming.TILE))
        self.prelude.append(assign(name, load))
        self.cache[key][naming.TILE] = ast.Name(name, ast.Load())
        return self.cache[key][naming.TILE]

    def store(self, view: View, value: ast.expr) -> ast.stmt:
        """Store ``value`` into a view's tile; the parameter's hoisted tiles go stale."""
        statement = memory.store(self.context, view, value, self.addressing(view))
        self.stale(view.parameter.name)
        return statement

    def stale(self, name: str) -> None:
        """Forget the hoisted tiles of parameter ``name``: it was just stored to."""
        for key, entry in self.cache.items():
            if key[0] == name:
                entry.pop(naming.TILE, None)


def view_key(view: View) -> tuple[Any, ...]:
    """Identifies a tile: parameter, level and the index expressions' text."""
    texts = tuple(ast.unparse(index) for indices in view.indices for index in indices)
    names = tuple(
        sorted(
            {
                n.id
                for indices in view.indices
                for i in indices
                for n in ast.walk(i)
                if isinstance(n, ast.Name)
            }
        )
    )
    return (view.parameter.name, view.depth, names, texts)


_SPREAD_POINTERS, _SPREAD_MASK, _SPREAD_KEEP, _SPREAD_SHAPE = (
    "spread pointers",
    "spread mask",
    "spread keep",
    "spread shape",
)
"""A hoisted tile's entries for its :class:`~nt_triton._codegen.memory.Spread`."""


def _cached_spread(entry: dict[str, ast.expr]) -> Spread | None:
    """The hoisted :class:`~nt_triton._codegen.memory.Spread` of a cache entry (if any)."""
    if _SPREAD_POINTERS not in entry:
        return None
    shape = entry[_SPREAD_SHAPE]
    assert isinstance(shape, ast.Tuple)
    return Spread(entry[_SPREAD_POINTERS], entry.get(_SPREAD_MASK), entry.get(_SPREAD_KEEP), shape)
