"""From bindings to addresses: per source dimension, the index a tile element reads.

An arranged parameter's bindings define every replaced index variable in
terms of newer ones.  To address a tile, the *live* variables get values —
program indices for the outermost level (the grid), the application's
subscripts for middle levels, ``tl.arange`` for the tile — and the bindings
are resolved down to the source tensor's own variables: one index expression
per source dimension.  The ranges the bindings recorded become the mask,
leaving out those that hold by construction (a live variable against its own
size); a tile's check that holds whenever its size divides the dimension's
vanishes at compile time when the call's sizes say so (:mod:`divisibility`).
"""

from __future__ import annotations

from collections.abc import Callable

from ninetoothed.arrangement.mapping import Binding
from ninetoothed.arrangement.simplify import simplify
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import CodegenError
from ninetoothed.spec.parameter import Parameter
from nt_triton._codegen import divisibility, jagged, naming, ordering, separable
from nt_triton._codegen.context import Context, names_in
from nt_triton._codegen.geometry import block_size, block_variables
from nt_triton._codegen.views import View

__all__ = ["Addressing", "addressing", "program_batch", "sourced_addressing"]

Addressing = tuple[list[SymbolLike], list[SymbolLike]]
"""Index per source dimension, and the mask's terms (all must hold)."""


def addressing(context: Context, view: View) -> Addressing:
    """Per source dimension, the index a tile element reads; and the mask terms."""
    indices, mask, _ = sourced_addressing(context, view)
    return indices, mask


def sourced_addressing(
    context: Context, view: View
) -> tuple[list[SymbolLike], list[SymbolLike], list[bool]]:
    """:func:`addressing`, and per mask term whether it is a source dimension's bound
    (``index < size``, or that check folded away on divisibility): the terms a tensor
    descriptor's box clips to by itself (:mod:`nt_triton._codegen.descriptors`)."""
    parameter = view.parameter
    levels = parameter.arranged.levels()
    if not view.is_innermost:
        raise CodegenError(
            f"{context.spec.label}: {parameter.name!r} has {len(levels) - view.depth - 1} more "
            f"level(s) below this one; index it (e.g. {parameter.name}[k]) to reach a tile"
        )
    context.addressed.add(parameter.name)
    live, ranges, block = _live_variables(context, view)
    bindings = context.bindings(parameter)
    value_of = _resolver(context, view, bindings, live)
    indices = [value_of(variable) for variable in parameter.source.source_variables]
    reads = context.grid_dims_read.setdefault(parameter.name, set())
    reads |= ordering.dims_read(indices, len(context.grid))
    if parameter.source.jagged_dim is not None:
        tile_names = set().union(*(names_in(value) for value in block.values()))
        bindings = jagged.entry_bounds(context, view, bindings, indices[0], tile_names)
    mask: list[SymbolLike] = []
    sourced: list[bool] = []
    source_variables = set(parameter.source.source_variables)
    jagged_source = parameter.source.jagged_dim is not None
    # A tensor beside the grid may have fewer tiles than the grid has programs: the
    # programs past them must find every element masked, so no bound is taken as
    # known from the tile counts (KernelSpec.beside_grid).
    beside = parameter.name in context.spec.beside_grid
    for variable, binding in bindings.items():
        if binding.bound is None:
            continue
        value = value_of(variable)
        if beside:
            term = value < binding.bound
            if term is not True:
                mask.append(term)
                sourced.append(variable in source_variables)
        elif not _is_in_range(value, binding.bound, live, ranges) and not separable.below(
            value, binding.bound
        ):
            outer = None if binding.outer is None else value_of(binding.outer)
            mask.append(divisibility.check(context, value, binding, jagged_source, outer))
            sourced.append(variable in source_variables)
        if binding.may_be_negative and not (isinstance(value, int) and value >= 0):
            mask.append(value >= 0)
            sourced.append(False)
    for dim, level_dim in enumerate(view.level.dims):
        variable_value = block.get(level_dim.variable)
        if isinstance(variable_value, Symbol) and level_dim.variable not in ranges:
            if view.element is not None:
                # An application's index picks one element: any value, so it is
                # checked as given, both ways (no padding or divisibility folds).
                mask.append(variable_value < context.expression(level_dim.size))
                mask.append(variable_value >= 0)
                sourced += [False, False]
                continue
            extent = block_size(context, parameter, view.depth, dim)
            size = context.expression(level_dim.size)
            mask.append(divisibility.padding_check(variable_value, size, extent))
            sourced.append(False)
    kept = [(term, from_source) for term, from_source in zip(mask, sourced) if term is not True]
    if any(term is False for term, _ in kept):
        return indices, [False], [False]
    return indices, [term for term, _ in kept], [from_source for _, from_source in kept]


def program_batch(context: Context, parameter: Parameter) -> SymbolLike | None:
    """The source index along dimension 0 (a jagged tensor's batch entry) of the program.

    The outermost level's variables are the program's grid indices; every
    deeper level's are left free (0 where the level's size is 1).  None when
    the index depends on them (the program's tiles lie in several batch
    entries).
    """
    levels = parameter.arranged.levels()
    live: dict[str, SymbolLike] = {}
    for dim, level_dim in enumerate(levels[0].dims):
        grid_size = context.grid[dim]
        live[level_dim.variable] = (
            0 if isinstance(grid_size, int) and grid_size == 1 else Symbol(naming.grid_index(dim))
        )
    free: dict[str, SymbolLike] = {}
    for level_dim in (d for level in levels[1:] for d in level.dims):
        size = context.expression(level_dim.size)
        single = isinstance(size, int) and size == 1
        name = naming.numbered(f"{naming.PREFIX}free", len(free))
        free[level_dim.variable] = 0 if single else Symbol(name)
    value_of = _resolver(context, View(parameter, 0), context.bindings(parameter), live | free)
    batch = value_of(parameter.source.source_variables[0])
    if names_in(batch) & set().union(*(names_in(value) for value in free.values())):
        return None
    return batch


def _live_variables(
    context: Context, view: View
) -> tuple[dict[str, SymbolLike], dict[str, SymbolLike], dict[str, SymbolLike]]:
    """Values of the live variables, the ranges they stay in by construction, and
    the tile's own (arange) variables."""
    levels = view.parameter.arranged.levels()
    live: dict[str, SymbolLike] = {}
    ranges: dict[str, SymbolLike] = {}
    for dim, level_dim in enumerate(levels[0].dims):
        grid_size = context.grid[dim]
        live[level_dim.variable] = (
            0 if isinstance(grid_size, int) and grid_size == 1 else Symbol(naming.grid_index(dim))
        )
        ranges[level_dim.variable] = context.expression(level_dim.size)
    for depth, indices in enumerate(view.indices, start=1):
        for level_dim, index in zip(levels[min(depth, view.depth)].dims, indices):
            live[level_dim.variable] = context.placeholder(index)
            if depth < len(levels) - 1 or view.element is None:
                ranges[level_dim.variable] = context.expression(level_dim.size)
    block = block_variables(context, view)
    live.update(block)
    if view.element is not None:  # an element's indices are masked by the tile's sizes
        return live, ranges, {d.variable: live[d.variable] for d in view.level.dims}
    for dim, level_dim in enumerate(view.level.dims):
        size = context.expression(level_dim.size)
        if block_size(context, view.parameter, view.depth, dim) == size:
            ranges[level_dim.variable] = size
    return live, ranges, block


def _resolver(
    context: Context, view: View, bindings: dict[str, Binding], live: dict[str, SymbolLike]
) -> Callable[[str], SymbolLike]:
    """A function resolving an index variable through the bindings (memoised)."""
    resolved: dict[str, SymbolLike] = dict(live)

    def value_of(variable: str) -> SymbolLike:
        if variable in resolved:
            return resolved[variable]
        binding = bindings.get(variable)
        if binding is None:
            raise CodegenError(
                f"{context.spec.label}: index variable {variable} of {view.parameter.name!r} is "
                "neither bound nor live; was a level replaced after being arranged?"
            )
        expression = binding.expression
        if isinstance(expression, Symbol):
            expression = expression.substitute(
                {
                    name: value_of(name)
                    for name in expression.names()
                    if name in bindings or name in live
                }
            )
        resolved[variable] = simplify(expression)
        return resolved[variable]

    return value_of


def _is_in_range(
    value: SymbolLike, bound: SymbolLike, live: dict[str, SymbolLike], ranges: dict[str, SymbolLike]
) -> bool:
    """Whether ``0 <= value < bound`` holds by construction."""
    if isinstance(value, int) and isinstance(bound, int):
        return 0 <= value < bound
    if isinstance(value, int) and value == 0 and isinstance(bound, Symbol):
        return False
    if isinstance(value, Symbol):
        for variable, symbol in live.items():
            if isinstance(symbol, Symbol) and symbol == value and variable in ranges:
                return bool(ranges[variable] == bound)
    return False
