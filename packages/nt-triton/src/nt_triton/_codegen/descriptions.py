"""Attributes of tensor parameters in an application: shapes, dtypes, sources.

``x.shape`` is the level's declared sizes, a tile's included (upstream's
meaning: a tile of constexpr size 100 has ``x.shape[-1] == 100``, though it
is loaded padded to 128, so ``ntl.sum(x) / x.shape[-1]`` is a mean);
``x.dtype`` is the next level (a :class:`TypeView`) or, at the bottom, the
element type read from the pointer; ``x.source`` describes the unarranged
tensor (``shape``, ``strides``, ``dtype``, ``ndim``);
``x.offsets`` must be called (see :func:`~nt_triton._codegen.memory.offsets`).
Shapes are tuples of AST nodes, which the application may index with
integer constants.
"""

from __future__ import annotations

import ast
from typing import Any

from ninetoothed.arrangement.simplify import simplify
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import CodegenError
from nt_triton._codegen import addressing, jagged, naming
from nt_triton._codegen.context import Context
from nt_triton._codegen.geometry import tile_shape
from nt_triton._codegen.views import ElementType, SourceView, TypeView, View

__all__ = ["ATTRIBUTES", "OFFSETS", "attribute", "element_type", "in_program"]

OFFSETS = "offsets"
"""``x.offsets``: resolved to ``(OFFSETS, view)`` until it is called."""

ATTRIBUTES = ("shape", "dtype", "ndim", "source", OFFSETS)
"""The attributes a parameter's level has as a description; any other is the loaded
tile's (a Triton tensor's, such as ``x.to(dtype)``)."""


def attribute(context: Context, base: Any, name: str, node: ast.Attribute) -> Any:
    """What ``base.name`` stands for (``node`` is the attribute, for errors)."""
    if isinstance(base, TypeView) and name in ("shape", "dtype", "ndim"):
        return _level_attribute(context, base.view, name)
    if isinstance(base, View):
        if name in ("shape", "dtype", "ndim"):
            return _level_attribute(context, base, name)
        if name == "source":
            return SourceView(base.parameter)
        if name == OFFSETS:
            return (OFFSETS, base)
    if isinstance(base, SourceView):
        found = _source_attribute(context, base, name)
        if found is not None:
            return found
    if isinstance(base, ElementType):
        return ast.Attribute(element_type(context, base), name, ast.Load())
    raise CodegenError(
        f"{context.spec.label}: unsupported attribute {name!r} of a tensor parameter in "
        f"{ast.unparse(node)} (supported: shape, dtype, ndim, source, offsets)"
    )


def element_type(context: Context, element: ElementType) -> ast.expr:
    """The element type of a parameter, read from its pointer's type."""
    pointer = naming.pointer(element.parameter.name)
    context.used_names.add(pointer)
    return ast.parse(f"{pointer}.dtype.element_ty", mode="eval").body


def _level_attribute(context: Context, view: View, name: str) -> Any:
    if view.element is not None:  # one element of a tile: a scalar
        if name == "dtype":
            return ElementType(view.parameter)
        return () if name == "shape" else ast.Constant(0)
    if name == "shape":
        return tuple(context.code(size) for size in _shape_of(context, view))
    if name == "dtype":
        if view.is_innermost:
            return ElementType(view.parameter)
        return TypeView(View(view.parameter, view.depth + 1, view.indices))
    return ast.Constant(view.level.ndim)


def _shape_of(context: Context, view: View) -> tuple[SymbolLike, ...]:
    if view.is_innermost:
        tile_shape(context, view)  # checks that the sizes can be tile sizes
    return tuple(in_program(context, context.expression(dim.size)) for dim in view.level.dims)


def in_program(context: Context, size: SymbolLike) -> SymbolLike:
    """A size as the application sees it: a jagged dimension's size is the length of the
    program's batch entry (the host's, the longest, is the grid's only), as upstream."""
    if not isinstance(size, Symbol):
        return size
    lengths: dict[str, SymbolLike] = {}
    for parameter in context.spec.tensor_parameters:
        jagged_dim = parameter.source.jagged_dim
        name = None if jagged_dim is None else naming.size(parameter.name, jagged_dim)
        if name is not None and name in size.names():
            batch = addressing.program_batch(context, parameter)
            lengths[name] = jagged.program_entry_length(context, parameter, batch)
    return simplify(size.substitute(lengths)) if lengths else size


def _source_attribute(context: Context, base: SourceView, name: str) -> Any:
    parameter = base.parameter
    if name == "shape":
        return tuple(
            context.code(in_program(context, context.expression(size)))
            for size in parameter.source.shape
        )
    if name == "strides":
        return tuple(
            context.code(Symbol(naming.stride(parameter.name, d)))
            for d in range(parameter.source.ndim)
        )
    if name == "dtype":
        return ElementType(parameter)
    if name == "ndim":
        return ast.Constant(parameter.source.ndim)
    return None
