"""Jagged tensors in generated code: each tile's batch entry, its start and its length.

A jagged parameter ``x`` (``Tensor(ndim, jagged_dim=d)``, see
:mod:`ninetoothed.arrangement._jagged`) comes with ``x_offsets``; its size along ``d``
(``x_size_d``) is the longest entry's length, which the grid and the
outermost shapes use.  A tile reads batch entry ``b`` (its source index along
dimension 0, which must not vary within the tile), so:

* its addresses start at ``x_offsets[b]`` times the stride of ``d`` (the
  batch's own stride is 0);
* its mask bounds dimension ``d`` by the entry's own length,
  ``x_offsets[b + 1] - x_offsets[b]``, instead of the longest.

The application sees the same: ``x.source.shape[d]``, and any level's size
that depends on it (``x.shape[0]``, the number of blocks along ``d``), is
the length of the program's batch entry, as in upstream, where the size
symbol of ``d`` is that length inside the kernel (the grid alone is taken
with the longest).
"""

from __future__ import annotations

import ast

from ninetoothed.arrangement.mapping import Binding
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import CodegenError
from ninetoothed.spec.parameter import Parameter
from nt_triton._codegen import naming
from nt_triton._codegen.context import Context, names_in
from nt_triton._codegen.syntax import call
from nt_triton._codegen.views import View

__all__ = ["entry_bounds", "entry_start", "program_entry_length"]


def entry_bounds(
    context: Context,
    view: View,
    bindings: dict[str, Binding],
    batch: SymbolLike,
    tile_names: set[str],
) -> dict[str, Binding]:
    """``bindings`` with the jagged size in their bounds replaced by the entry's length."""
    parameter = view.parameter
    jagged_dim = parameter.source.jagged_dim
    assert jagged_dim is not None
    if names_in(batch) & tile_names:
        raise CodegenError(
            f"{context.spec.label}: jagged tensor {parameter.name!r} (jagged_dim={jagged_dim}): "
            "a tile must hold one batch entry (size 1 along dimension 0), but this tile spans "
            f"several ({batch} varies within it); tile dimension 0 by 1"
        )
    size = {naming.size(parameter.name, jagged_dim): _entry_length(context, parameter, batch)}
    return {
        variable: Binding(
            binding.expression,
            binding.bound.substitute(size) if isinstance(binding.bound, Symbol) else binding.bound,
            binding.may_be_negative,
        )
        for variable, binding in bindings.items()
    }


def entry_start(context: Context, view: View, batch: SymbolLike) -> SymbolLike:
    """Where the tile's batch entry starts in memory: ``x_offsets[b] * x_stride_d``."""
    jagged_dim = view.parameter.source.jagged_dim
    assert jagged_dim is not None
    stride = Symbol(naming.stride(view.parameter.name, jagged_dim))
    return _load_offset(context, view.parameter, batch, 0) * stride


def program_entry_length(
    context: Context, parameter: Parameter, batch: SymbolLike | None
) -> SymbolLike:
    """The length of the program's batch entry ``batch`` of jagged ``parameter``.

    ``batch`` is None where the program's batch entry is not one (it varies
    along the levels below the grid): the application's sizes of the jagged
    dimension would then have no single value, so this is refused.
    """
    if batch is None:
        raise CodegenError(
            f"{context.spec.label}: jagged tensor {parameter.name!r} "
            f"(jagged_dim={parameter.source.jagged_dim}): the application reads the size of its "
            "jagged dimension (x.source.shape or a level's shape), which is the length of the "
            "program's batch entry, but this program's levels span several batch entries; keep "
            "the batch dimension 0 in the outermost level, tiled by 1"
        )
    return _entry_length(context, parameter, batch)


def _entry_length(context: Context, parameter: Parameter, batch: SymbolLike) -> SymbolLike:
    """``x_offsets[b + 1] - x_offsets[b]``."""
    return _load_offset(context, parameter, batch, 1) - _load_offset(context, parameter, batch, 0)


def _load_offset(context: Context, parameter: Parameter, batch: SymbolLike, step: int) -> Symbol:
    """A symbol standing for ``tl.load(x_offsets + b + step)``.

    ``b`` is clamped to the last entry unless it is the program's grid index
    over the batch: a batch index past the end (several levels over the batch)
    is masked anyway, and its offsets stay in bounds.
    """
    name = parameter.name
    offsets = naming.offsets(name)
    context.used_names.add(offsets)
    index = context.code(batch)
    if isinstance(batch, Symbol) and not _whole_batch(context, name, batch):
        last = context.code(Symbol(naming.size(name, 0)) - 1)
        index = call("tl.minimum", [index, last])
    if step:
        index = ast.BinOp(index, ast.Add(), ast.Constant(step))
    return context.placeholder(
        call("tl.load", [ast.BinOp(ast.Name(offsets, ast.Load()), ast.Add(), index)])
    )


def _whole_batch(context: Context, name: str, batch: Symbol) -> bool:
    """Whether ``batch`` is the grid index over a grid dimension of the batch's size."""
    size = Symbol(naming.size(name, 0))
    return any(
        batch == Symbol(naming.grid_index(dim)) and isinstance(extent, Symbol) and extent == size
        for dim, extent in enumerate(context.grid)
    )
