"""Triton memory operations: pointers, masks, ``tl.load`` and ``tl.store`` of tiles.

A tile's pointers are the parameter's pointer plus ``sum(index * stride)``
over the source dimensions (see :mod:`addressing`), broadcast to the tile's
shape when some dimension's index does not vary; the mask is the conjunction
of the addressing's terms.  Masked loads read the source tensor's ``other``
value, or 0 when it gives none.
"""

from __future__ import annotations

import ast

from ninetoothed.errors import CodegenError
from ninetoothed.symbol import Symbol, SymbolLike
from nt_triton.codegen import naming
from nt_triton.codegen.addressing import addressing
from nt_triton.codegen.context import Context, names_in
from nt_triton.codegen.geometry import arange_names, tile_shape
from nt_triton.codegen.syntax import call, dotted
from nt_triton.codegen.views import View

PointersAndMask = tuple[ast.expr, ast.expr | None]
"""A tile's pointer expression and mask expression (``None``: no mask)."""


def pointers_and_mask(context: Context, view: View) -> PointersAndMask:
    """The pointers of a view's tile and the mask of its elements inside the source."""
    parameter = view.parameter
    indices, mask = addressing(context, view)
    context.tiles.append(tile_shape(context, view))
    offsets: SymbolLike = 0
    for dim, index in enumerate(indices):
        offsets = offsets + index * Symbol(naming.stride(parameter.name, dim))
    pointer_name = naming.pointer(parameter.name)
    context.used_names.add(pointer_name)
    pointers: ast.expr = ast.BinOp(
        left=ast.Name(pointer_name, ast.Load()), op=ast.Add(), right=context.code(offsets)
    )
    block_names = arange_names(view) & set(context.aranges)
    if not block_names <= names_in(offsets):
        pointers = call("tl.broadcast_to", [pointers, _shape(context, view)])
    mask_node: ast.expr | None = None
    for term in mask:
        node = context.code(term)
        if block_names and not names_in(term) & block_names and isinstance(node, ast.Compare):
            # A scalar condition is compared after broadcasting to the tile:
            # Triton's interpreter rejects masks built from scalar booleans.
            # A literal (a middle level indexed by a constant) is no Triton value.
            node.left = (
                call("tl.full", [_shape(context, view), node.left, dotted("tl.int32")])
                if isinstance(node.left, ast.Constant)
                else call("tl.broadcast_to", [node.left, _shape(context, view)])
            )
        mask_node = node if mask_node is None else ast.BinOp(mask_node, ast.BitAnd(), node)
    return pointers, mask_node


def load(context: Context, view: View, where: PointersAndMask | None = None) -> ast.expr:
    """``tl.load`` of a view's tile (at ``where``, when already computed)."""
    context.loaded.add(view.parameter.name)
    pointers, mask = where or pointers_and_mask(context, view)
    keywords = []
    if mask is not None:
        keywords.append(ast.keyword("mask", mask))
        other = view.parameter.source.other
        keywords.append(ast.keyword("other", ast.Constant(0 if other is None else other)))
    return call("tl.load", [pointers], keywords)


def store(
    context: Context, view: View, value: ast.expr, where: PointersAndMask | None = None
) -> ast.stmt:
    """``tl.store`` of ``value`` into a view's tile (at ``where``, when already computed)."""
    context.stored.add(view.parameter.name)
    pointers, mask = where or pointers_and_mask(context, view)
    keywords = [ast.keyword("mask", mask)] if mask is not None else []
    return ast.Expr(call("tl.store", [pointers, value], keywords))


def offsets(context: Context, view: View, dim: int) -> ast.expr:
    """``x.offsets(dim)``: the source index along ``dim`` of every element of the tile."""
    indices, _ = addressing(context, view)
    if not -len(indices) <= dim < len(indices):
        raise CodegenError(
            f"{context.spec.name}: {view.parameter.name}.offsets({dim}): the source has "
            f"{len(indices)} dimensions"
        )
    return context.code(indices[dim])


def _shape(context: Context, view: View) -> ast.Tuple:
    return ast.Tuple([context.code(size) for size in tile_shape(context, view)], ast.Load())
