"""Broadcast tiles whose lanes past their source no store can see: no fill select.

A tile loaded once along some dimensions (:class:`~nt_triton._codegen.memory.Spread`,
``addmm``'s bias row) fills its lanes past the source's rows with the fill value
after the broadcast (``tl.where`` on the *keep* mask), as a masked load would.  On
Hopper that select is built in a blocked layout, and the tile then costs a
whole-tile layout conversion into the product's layout (``docs/design.md``): where
the rows do not divide the tile, ``addmm`` ran 8-20% behind ``mm``.

The select changes nothing a program writes when two things hold, and then it is
left out:

* every reference to the parameter in the application is its whole tile, inside an
  expression of element-wise operations (arithmetic, comparisons, ``ntl.cast``,
  ``ntl.where``, element-wise math) that is the value of a whole-tile store to an
  output parameter (:func:`element_wise_stores`); so a lane of the loaded tile
  reaches that lane of the store and nothing else;
* each of those outputs' tiles has the loaded tile's shape and its store's mask has
  every term of the keep mask, up to the tiles' own aranges
  (:func:`keep_is_stored_mask`); so a lane the select would fill is a lane the store
  leaves alone (masked, or clipped by a descriptor's box, the same bound).
"""

from __future__ import annotations

import ast

from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from nt_triton._codegen import naming
from nt_triton._codegen.addressing import addressing
from nt_triton._codegen.context import Context
from nt_triton._codegen.geometry import tile_shape
from nt_triton._codegen.views import View

__all__ = ["element_wise_stores", "keep_is_stored_mask"]

ELEMENT_WISE_CALLS = frozenset(
    {
        "abs", "cast", "cos", "exp", "exp2", "fma", "log", "log2", "maximum", "minimum",
        "rsqrt", "sigmoid", "sin", "sqrt", "where",
    }
)  # fmt: skip
"""``ntl`` functions that act lane by lane."""

_OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)


def element_wise_stores(context: Context, body: list[ast.stmt]) -> dict[str, frozenset[str]]:
    """Per tensor parameter whose every reference is element-wise into whole-tile stores
    (see the module's docstring), the outputs it is stored to."""
    tiles = {
        p.name
        for p in context.spec.tensor_parameters
        if len(p.arranged.levels()) == 2  # a name is the whole tile: grid, then tile
    }
    parents: dict[ast.AST, ast.AST] = {}
    module = ast.Module(body=body, type_ignores=[])
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    found: dict[str, set[str]] = {}
    refused: set[str] = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.Name) or node.id not in tiles:
            continue
        if not isinstance(node.ctx, ast.Load):
            refused.add(node.id)
            continue
        output = _store_reached(node, parents, tiles)
        if output is None or output == node.id:
            refused.add(node.id)
        else:
            found.setdefault(node.id, set()).add(output)
    return {name: frozenset(outputs) for name, outputs in found.items() if name not in refused}


def _store_reached(node: ast.AST, parents: dict[ast.AST, ast.AST], tiles: set[str]) -> str | None:
    """The output whose whole-tile store ``node`` reaches through element-wise operations
    only, else None."""
    while True:
        parent = parents.get(node)
        if isinstance(parent, ast.Assign):
            targets = parent.targets
            if parent.value is node and len(targets) == 1 and isinstance(targets[0], ast.Name):
                return targets[0].id if targets[0].id in tiles else None
            return None
        if isinstance(parent, _OPERATIONS):
            node = parent
            continue
        if isinstance(parent, ast.Call) and node in parent.args and _element_wise(parent.func):
            node = parent
            continue
        return None


def _element_wise(function: ast.expr) -> bool:
    return (
        isinstance(function, ast.Attribute)
        and isinstance(function.value, ast.Name)
        and function.value.id == "ntl"
        and function.attr in ELEMENT_WISE_CALLS
    )


def keep_is_stored_mask(context: Context, view: View, keep: list[SymbolLike]) -> bool:
    """Whether the lanes ``keep`` (the mask terms of a spread tile of ``view``) would fill
    are lanes no store of the tile's values writes (see the module's docstring)."""
    outputs = context.unselected.get(view.parameter.name)
    if not outputs or view.depth != 1 or view.indices:
        return False
    shape = tile_shape(context, view)
    wanted = {_canonical(term, view) for term in keep}
    for name in outputs:
        stored = View(context.parameters[name], 1)
        if tile_shape(context, stored) != shape:
            return False
        _, mask = addressing(context, stored)
        if not wanted <= {_canonical(term, stored) for term in mask}:
            return False
    return True


def _canonical(term: SymbolLike, view: View) -> str:
    """``term`` with the view's tile aranges named by their dimension alone."""
    if not isinstance(term, Symbol):
        return repr(term)
    names = {
        naming.arange(view.parameter.name, view.depth, d): Symbol(f"{naming.PREFIX}lane_{d}")
        for d in range(view.level.ndim)
    }
    return str(term.substitute(names))
