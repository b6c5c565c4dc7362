"""Tile geometry: the power-of-two extent of each tile dimension, and its aranges.

Triton's tiles have power-of-two sizes.  A tile dimension whose size is a
known power of two (a literal, or a meta symbol not declared
``power_of_two=False``: tuning tries powers of two only) is loaded at that
size; any other size is padded to the next power of two (a literal at once;
a symbol, constexpr or known only at run time, through a constexpr parameter
the host computes per call,
:class:`~nt_triton._codegen.context.PaddedSize`) and the padding is masked.
"""

from __future__ import annotations

from ninetoothed.arrangement.symbol import Symbol, SymbolLike, next_power_of_two
from ninetoothed.errors import CodegenError
from ninetoothed.spec.parameter import Parameter
from nt_triton._codegen import naming
from nt_triton._codegen.context import Context, PaddedSize, names_in
from nt_triton._codegen.views import View

__all__ = ["arange_names", "block_size", "block_variables", "tile_shape", "vector_arange"]


def block_size(context: Context, parameter: Parameter, depth: int, dim: int) -> SymbolLike:
    """The (power-of-two) extent of a tile dimension as loaded."""
    size = context.expression(parameter.arranged.levels()[depth].dims[dim].size)
    if isinstance(size, int):
        return next_power_of_two(size)
    if size.is_power_of_two():
        return size
    name = context.spec.label
    free = size.free_symbols.values()
    if any(s.meta for s in free) and any(not s.meta for s in free):
        raise CodegenError(
            f"{name}: the tile size {size} of {parameter.name!r} mixes meta and "
            "constexpr symbols and is not a known power of two; padding it is not supported"
        )
    padded = naming.padded_size(parameter.name, depth, dim)
    context.padded.setdefault(padded, PaddedSize(padded, size))
    return Symbol(padded, constexpr=True, power_of_two=True)


def tile_shape(context: Context, view: View) -> tuple[SymbolLike, ...]:
    """The loaded (padded) shape of a view's tile (none for one element of it)."""
    if view.element is not None:
        return ()
    return tuple(block_size(context, view.parameter, view.depth, d) for d in range(view.level.ndim))


def block_variables(context: Context, view: View) -> dict[str, SymbolLike]:
    """Index variables of a loaded tile: ``tl.arange`` broadcast to its dimension.

    Dimensions of size 1 are index 0; each other dimension gets an arange
    statement (recorded once in the context, emitted in the kernel's prologue).
    """
    level = view.level
    values: dict[str, SymbolLike] = {}
    if view.element is not None:  # one element: its indices are live, not aranges
        return values
    rank = level.ndim
    for dim, level_dim in enumerate(level.dims):
        size = context.expression(level_dim.size)
        if isinstance(size, int) and size == 1:
            values[level_dim.variable] = 0
            continue
        extent = block_size(context, view.parameter, view.depth, dim)
        name = naming.arange(view.parameter.name, view.depth, dim)
        if name not in context.aranges:
            context.used_names |= names_in(extent)
            expansion = ""
            if rank > 1:
                expansion = "[" + ", ".join(":" if d == dim else "None" for d in range(rank)) + "]"
            context.aranges[name] = f"{name} = tl.arange(0, {extent}){expansion}"
        values[level_dim.variable] = Symbol(name)
    return values


def arange_names(view: View) -> set[str]:
    """The names of the aranges a view's tile can use."""
    if view.element is not None:
        return set()
    return {naming.arange(view.parameter.name, view.depth, d) for d in range(view.level.ndim)}


def vector_arange(context: Context, view: View, name: str) -> Symbol:
    """The one-dimensional ``tl.arange`` behind the broadcast arange ``name`` of a view's tile.

    Recorded once in the context (emitted in the kernel's prologue) the first
    time ``x.offsets(dim)`` needs it.
    """
    for dim in range(view.level.ndim):
        if naming.arange(view.parameter.name, view.depth, dim) == name:
            break
    else:
        raise CodegenError(f"{context.spec.label}: {name} is not an arange of this tile")
    vector = naming.arange_vector(view.parameter.name, view.depth, dim)
    if vector not in context.aranges:
        extent = block_size(context, view.parameter, view.depth, dim)
        context.aranges[vector] = f"{vector} = tl.arange(0, {extent})"
    return Symbol(vector)
