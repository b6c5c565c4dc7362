"""The unarranged tensor in an application: ``x.source[...]``, ``data_ptr()``, ``stride(d)``.

Upstream lets an application reach past the arrangement: load from
(gather) and store to (scatter) ``x.source[i0, i1, ...]`` with one index
expression per source dimension, any Triton values that broadcast
together, masked by the source's bounds (``0 <= i_d < size_d``); and do its
own pointer arithmetic with ``x.source.data_ptr()`` (the tensor's base
pointer) and ``x.source.stride(d)`` (in elements).  Gathers read the
tensor's ``other`` where the mask is false, as tiles do.
"""

from __future__ import annotations

import ast

from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.errors import CodegenError
from ninetoothed.spec.parameter import Parameter
from nt_triton._codegen import naming
from nt_triton._codegen.context import Context
from nt_triton._codegen.syntax import call, constant_int

__all__ = [
    "DATA_PTR",
    "METHODS",
    "STRIDE",
    "gather",
    "method",
    "pointer",
    "scatter",
    "subscript_indices",
]

DATA_PTR = "data_ptr"
STRIDE = "stride"
METHODS = (DATA_PTR, STRIDE)
"""The methods of ``x.source`` an application may call."""


def method(context: Context, parameter: Parameter, name: str, node: ast.Call) -> ast.expr:
    """``x.source.data_ptr()`` or ``x.source.stride(d)`` (``node`` is the call)."""
    if node.keywords:
        raise CodegenError(f"{context.spec.label}: {ast.unparse(node)} takes no keywords")
    if name == DATA_PTR:
        if node.args:
            raise CodegenError(
                f"{context.spec.label}: {ast.unparse(node)}: data_ptr() takes no arguments"
            )
        return pointer(context, parameter)
    dim = constant_int(node.args[0]) if len(node.args) == 1 else None
    if dim is None:
        raise CodegenError(
            f"{context.spec.label}: {ast.unparse(node)}: stride takes one integer constant, the dim"
        )
    context.through_source.add(parameter.name)
    return context.code(Symbol(naming.stride(parameter.name, _dim(context, parameter, dim))))


def pointer(context: Context, parameter: Parameter) -> ast.expr:
    """The parameter's base pointer."""
    name = naming.pointer(parameter.name)
    context.used_names.add(name)
    context.through_source.add(parameter.name)
    return ast.Name(name, ast.Load())


def gather(context: Context, parameter: Parameter, indices: list[ast.expr]) -> ast.expr:
    """``x.source[indices]`` read: a masked ``tl.load`` at those source indices."""
    context.loaded.add(parameter.name)
    pointers, mask = _pointers_and_mask(context, parameter, indices)
    keywords = [ast.keyword("mask", mask)]
    if parameter.source.other is not None:
        keywords.append(ast.keyword("other", ast.Constant(parameter.source.other)))
    return call("tl.load", [pointers], keywords)


def scatter(
    context: Context, parameter: Parameter, indices: list[ast.expr], value: ast.expr
) -> ast.stmt:
    """``x.source[indices] = value``: a masked ``tl.store`` at those source indices."""
    context.stored.add(parameter.name)
    pointers, mask = _pointers_and_mask(context, parameter, indices)
    return ast.Expr(call("tl.store", [pointers, value], [ast.keyword("mask", mask)]))


def subscript_indices(context: Context, parameter: Parameter, index: ast.expr) -> list[ast.expr]:
    """The index expressions of ``x.source[index]``: one per source dimension, no slices."""
    items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    ndim = parameter.source.ndim
    if len(items) != ndim or any(isinstance(item, ast.Slice) for item in items):
        raise CodegenError(
            f"{context.spec.label}: {parameter.name}.source[...] needs {ndim} index "
            f"expression(s), one per source dimension (no slices), got {ast.unparse(index)}"
        )
    return items


def _pointers_and_mask(
    context: Context, parameter: Parameter, indices: list[ast.expr]
) -> tuple[ast.expr, ast.expr]:
    """``pointer + sum(i_d * stride_d)`` and ``&`` of ``0 <= i_d < size_d``."""
    if parameter.source.jagged_dim is not None:
        raise CodegenError(
            f"{context.spec.label}: {parameter.name}.source[...]: gathers from and scatters to "
            f"a jagged tensor (jagged_dim={parameter.source.jagged_dim}) are not supported; "
            "arrange it and read its tiles"
        )
    pointers = pointer(context, parameter)
    mask: ast.expr | None = None
    for dim, index in enumerate(indices):
        stride = context.code(Symbol(naming.stride(parameter.name, dim)))
        term = ast.BinOp(_copy(index), ast.Mult(), stride)
        pointers = ast.BinOp(pointers, ast.Add(), term)
        size = context.code(context.expression(parameter.source.shape[dim]))
        bounds = ast.BinOp(
            ast.Compare(_copy(index), [ast.GtE()], [ast.Constant(0)]),
            ast.BitAnd(),
            ast.Compare(_copy(index), [ast.Lt()], [size]),
        )
        mask = bounds if mask is None else ast.BinOp(mask, ast.BitAnd(), bounds)
    assert mask is not None, "a source tensor of rank 0 has no subscripts"
    return pointers, mask


def _copy(node: ast.expr) -> ast.expr:
    """A fresh copy of an index expression (it appears in the pointers and the mask)."""
    return ast.parse(ast.unparse(node), mode="eval").body


def _dim(context: Context, parameter: Parameter, dim: int) -> int:
    """``dim`` (negative counts from the end) checked against the source's rank."""
    ndim = parameter.source.ndim
    if not -ndim <= dim < ndim:
        raise CodegenError(
            f"{context.spec.label}: {parameter.name}.source has {ndim} dimensions, "
            f"no dimension {dim}"
        )
    return dim % ndim
