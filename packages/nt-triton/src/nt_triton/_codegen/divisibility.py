"""Range checks that vanish when a size is a multiple of its tile size.

``tile`` with the step equal to the tile size and no dilation binds the
replaced index as ``outer * t + inner`` and checks it against the old size
``n`` (:attr:`ninetoothed.arrangement.mapping.Binding.divisor`).  With ``outer`` below its
count ``ceil(n / t)`` and ``inner`` below ``t`` (what the rest of the mask and
the grid guarantee), the check holds for every element exactly when ``t``
divides ``n``: every tile is whole.  Hand-written kernels assume it and load
without masks, which Triton vectorises and pipelines best.

Such a check is emitted as ``(check) | (a % t == 0)`` where ``a`` is
compile-time: ``n`` itself when it is, else a constexpr parameter the host
computes per call from the call's sizes: the largest power of two that
divides ``n``, at most ``cap`` (the largest value ``t`` can take, so calls
whose sizes differ only in higher powers of two share a compiled kernel), 1
for an empty dimension.  ``t`` is a power of two and ``cap`` a multiple of
it, so ``a % t == 0`` exactly when ``t`` divides ``n``; a ``t`` pinned above
``cap`` keeps the check.  When ``a % t == 0`` is a constexpr ``True``,
Triton's folders reduce the mask to true and its canonicaliser drops the
mask from the load or store; otherwise the check stays as before.  Being
per call and computed by the host code that also passes the sizes the kernel
indexes with, the flag cannot disagree with them on any launch path.

Not eligible (the check is kept as written): steps other than the tile size,
dilated or floored tiles, ``pad`` and slices (their own checks), jagged
tensors, tile sizes that are not powers of two (their padding is masked
anyway) and sizes that involve meta symbols or the application's values.
"""

from __future__ import annotations

import ast

from ninetoothed.arrangement.mapping import Binding
from ninetoothed.arrangement.symbol import Symbol, SymbolLike, binary, compare
from nt_triton._codegen import naming, ragged_loops
from nt_triton._codegen.context import Alignment, Context, WholeTiles
from nt_triton._codegen.meta_values import symbol_values

__all__ = ["check", "padding_check"]


def check(
    context: Context,
    value: SymbolLike,
    binding: Binding,
    jagged: bool,
    outer: SymbolLike | None = None,
) -> SymbolLike:
    """The range check ``value < binding.bound``, made to vanish when the bound is a
    multiple of the binding's tile size (where that is known to hold, see the module),
    or when ``outer`` (the tile's index, resolved) is the variable of a loop whose
    iterations over whole tiles are being rewritten (see :mod:`ragged_loops`)."""
    bound, tile = binding.bound, binding.divisor
    assert bound is not None
    term = value < bound
    if jagged or tile is None or not isinstance(term, Symbol):
        return term
    if bound == tile:
        # A whole dimension in one tile (``-1``): the tile's own range (by construction
        # or its padding's check) is the dimension's.
        return True
    divisible = _divisible(context, bound, tile)
    if divisible is True:
        return True
    whole = ragged_loops.whole_tiles(context, outer)
    if whole is not None:
        whole.append(WholeTiles(bound, tile, divisible))
        return True
    if divisible is None:
        return term
    return binary(ast.BitOr(), term, divisible)


def _divisible(context: Context, bound: SymbolLike, tile: SymbolLike) -> SymbolLike | None:
    """``True`` when ``tile`` divides ``bound`` at compile time, else the compile-time
    condition that it does (``a % t == 0``), or None when none is known."""
    if not _is_tile_size(tile):
        return None
    if isinstance(tile, int) and isinstance(bound, int):
        return True if bound % tile == 0 else None
    if not isinstance(bound, Symbol) or not bound.is_runtime():
        alignment: SymbolLike = bound  # compile-time: the kernel divides it itself
    elif _known_to_host(context, bound):
        alignment = _alignment(context, bound, _largest(tile))
    else:
        return None
    return compare(ast.Eq(), alignment % tile, 0)


def _is_tile_size(tile: SymbolLike) -> bool:
    """A compile-time power of two greater than 1 (a tile of one element has no range)."""
    if isinstance(tile, int):
        return tile > 1 and tile & (tile - 1) == 0
    return tile.is_power_of_two() and not tile.is_runtime()


def _known_to_host(context: Context, size: Symbol) -> bool:
    """Whether host code knows every name of ``size`` and keys its plans by them: the
    tensors' sizes and the symbols given by keyword (not meta, not the application's)."""
    sizes = {
        naming.size(parameter.name, dim)
        for parameter in context.spec.tensor_parameters
        for dim in range(parameter.source.ndim)
    }
    given = set(context.spec.runtime_symbols) | set(context.spec.constexpr_symbols)
    return size.names() <= sizes | given


def _largest(tile: SymbolLike) -> SymbolLike:
    """The largest value ``tile`` takes: meta symbols at the largest value tuning tries
    (constexpr symbols stay: the host knows their values)."""
    if not isinstance(tile, Symbol):
        return tile
    largest = {
        name: symbol_values(symbol)[-1] for name, symbol in tile.free_symbols.items() if symbol.meta
    }
    return tile.substitute(largest)


def _alignment(context: Context, size: Symbol, cap: SymbolLike) -> Symbol:
    """The constexpr parameter holding ``size``'s alignment up to ``cap`` (one per pair)."""
    key = (str(size), str(cap))
    found = context.alignments.get(key)
    if found is None:
        found = Alignment(naming.aligned(len(context.alignments)), size, cap)
        context.alignments[key] = found
    return Symbol(found.name, constexpr=True)


def padding_check(value: SymbolLike, size: SymbolLike, extent: SymbolLike) -> SymbolLike:
    """The check ``value < size`` of a tile dimension padded to ``extent`` (a power of
    two), vanishing when the size given at the call is that power of two itself."""
    term = value < size
    if isinstance(extent, int) or not isinstance(term, Symbol) or not isinstance(size, Symbol):
        return term
    if any(symbol.meta for symbol in size.free_symbols.values()):
        return term  # a multiple of a meta symbol that is no power of two: never
    if size.is_runtime():
        return term  # folds only for a constexpr size; a run-time one is checked as it is
    return binary(ast.BitOr(), term, compare(ast.Eq(), size, extent))
