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
from dataclasses import dataclass
from typing import Any

from nt_triton._codegen import memory, naming
from nt_triton._codegen.context import Context
from nt_triton._codegen.geometry import tile_shape
from nt_triton._codegen.memory import PointersAndMask, Spread
from nt_triton._codegen.syntax import assign, call
from nt_triton._codegen.views import View

__all__ = ["Hoisted", "HoistedLoads", "view_key"]


@dataclass
class Hoisted:
    """A tile's hoisted names in the current stretch (None: not hoisted yet)."""

    pointers: ast.expr | None = None
    """The whole tile's pointers (a store's)."""
    mask: ast.expr | None = None
    """The whole tile's mask (None: none, or not hoisted yet)."""
    spread: Spread | None = None
    """The tile's load once along some dimensions, its parts named."""
    tile: ast.expr | None = None
    """The tile's value; stale (None again) after a store to its parameter."""


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
    cache: dict[tuple[Any, ...], Hoisted]
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
        entry = self.cache.get(key)
        if self.hoisting and entry is not None and entry.pointers is not None:
            return (entry.pointers, entry.mask), entry.spread
        (pointers, mask), spread = memory.address(self.context, view)
        if not self.hoisting:
            return (pointers, mask), spread
        stem = view.parameter.name
        entry = self.cache.setdefault(key, Hoisted())
        if spread is not None:
            # The spread's parts are named; the whole tile's pointers and mask (a
            # store's) are made of them, so neither is computed twice.
            spread = spread._replace(
                pointers=self.hoist(stem, naming.POINTERS, spread.pointers),
                mask=spread.mask and self.hoist(stem, naming.MASK, spread.mask),
                keep=spread.keep and self.hoist(stem, naming.KEEP, spread.keep),
            )
            entry.spread = spread
            entry.pointers = call("tl.broadcast_to", [spread.pointers, spread.shape])
            masks = [part for part in (spread.mask, spread.keep) if part is not None]
            if masks:
                entry.mask = (
                    masks[0] if len(masks) == 1 else ast.BinOp(masks[0], ast.BitAnd(), masks[1])
                )
            return (entry.pointers, entry.mask), spread
        entry.pointers = self.hoist(stem, naming.POINTERS, pointers)
        if mask is not None:
            entry.mask = self.hoist(stem, naming.MASK, mask)
        return (entry.pointers, entry.mask), None

    def hoist(self, stem: str, part: str, value: ast.expr) -> ast.Name:
        """``value`` assigned to a fresh name (``x_<part>_N``) before the statement."""
        name = self.fresh(naming.hoisted(stem, part))
        self.prelude.append(assign(name, value))
        return ast.Name(name, ast.Load())

    def load(self, view: View) -> ast.expr:
        """A tile's value: loaded once per straight-line stretch without stores."""
        key = view_key(view)
        cached = self.cache.get(key)
        if self.hoisting and cached is not None and cached.tile is not None:
            return cached.tile
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
        tile = self.hoist(view.parameter.name, naming.TILE, load)
        self.cache[key].tile = tile
        return tile

    def store(self, view: View, value: ast.expr) -> ast.stmt:
        """Store ``value`` into a view's tile; the parameter's hoisted tiles go stale."""
        statement = memory.store(self.context, view, value, self.addressing(view))
        self.stale(view.parameter.name)
        return statement

    def stale(self, name: str) -> None:
        """Forget the hoisted tiles of parameter ``name``: it was just stored to."""
        for key, entry in self.cache.items():
            if key[0] == name:
                entry.tile = None


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
