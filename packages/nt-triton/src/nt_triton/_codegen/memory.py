"""Triton memory operations: pointers, masks, ``tl.load`` and ``tl.store`` of tiles.

A tile's pointers are the parameter's pointer plus ``sum(index * stride)``
over the source dimensions (see :mod:`addressing`), broadcast to the tile's
shape when some dimension's index does not vary; the mask is the conjunction
of the addressing's terms.  Masked loads read the source tensor's ``other``
value; when it gives none, no ``other`` is passed and Triton fills the masked
lanes with zeros of the tile's own type (an ``other=0`` literal is an int32
that Triton cannot cast to float8 types).

A tile whose pointers do not vary along some of its dimensions (an ``expand``:
``addmm``'s bias row under every row of the output tile) is loaded once along
those (:class:`Spread`): a ``(1, BLOCK_SIZE_N)`` load broadcast in registers,
not a ``(BLOCK_SIZE_M, BLOCK_SIZE_N)`` load of repeated addresses, which costs
a register and a load instruction per element.  The mask's terms of the other
dimensions are applied after the broadcast (:data:`naming.SPREAD`), so the
tile's lanes outside the source hold the fill value as a masked load's would.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import NamedTuple

from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import CodegenError
from nt_triton._codegen import descriptors, jagged, naming, separable, unselected
from nt_triton._codegen.addressing import addressing
from nt_triton._codegen.context import Context, names_in
from nt_triton._codegen.geometry import arange_names, tile_shape, vector_arange
from nt_triton._codegen.syntax import call, dotted
from nt_triton._codegen.views import View

__all__ = [
    "PointersAndMask",
    "Spread",
    "address",
    "load",
    "offsets",
    "pointers_and_mask",
    "store",
]

PointersAndMask = tuple[ast.expr, ast.expr | None]
"""A tile's pointer expression and mask expression (``None``: no mask)."""


class Spread(NamedTuple):
    """How to load a tile whose pointers vary along some of its dimensions only: once
    along those, then broadcast to :attr:`shape` (see the module's docstring)."""

    pointers: ast.expr
    """The pointers, shaped like the tile along the dimensions they vary in, 1 elsewhere."""
    mask: ast.expr | None
    """The mask's terms of those dimensions and its scalar terms (the load's mask)."""
    keep: ast.expr | None
    """The mask's other terms: lanes outside the source along the other dimensions."""
    shape: ast.Tuple
    """The tile's shape."""


def pointers_and_mask(context: Context, view: View) -> PointersAndMask:
    """The pointers of a view's tile and the mask of its elements inside the source."""
    return address(context, view)[0]


def address(context: Context, view: View) -> tuple[PointersAndMask, Spread | None]:
    """The pointers and mask of a view's tile, and how to load it once along the
    dimensions its pointers do not vary in (None where they vary in all)."""
    parameter = view.parameter
    indices, mask = addressing(context, view)
    context.tiles.append(tile_shape(context, view))
    offsets = _memory_offsets(context, view, indices)
    pointer_name = naming.pointer(parameter.name)
    context.used_names.add(pointer_name)
    block_names = arange_names(view) & set(context.aranges)
    # Indices that tangle the tile's dimensions (an implicit GEMM's windows) are
    # summed per dimension, so each element costs one add, and a flattened block
    # of dimensions is one index where the host finds it contiguous (see separable).
    # (Not for jagged tensors: their batch entry's start is added to the offsets.)
    mixed = parameter.source.jagged_dim is None and (
        separable.tangled(indices, block_names) or bool(separable.chains(indices, block_names))
    )
    offsets_node = (
        separable.offsets(
            indices, _strides(view), block_names, context.code, _flagger(context, view)
        )
        if mixed
        else None
    )
    base: ast.expr = ast.BinOp(
        left=ast.Name(pointer_name, ast.Load()),
        op=ast.Add(),
        right=offsets_node or context.code(offsets),
    )
    shape = _shape(context, view)
    varying = block_names & names_in(offsets)
    pointers = base if block_names <= varying else call("tl.broadcast_to", [base, shape])

    def term_code(term: SymbolLike, shape: ast.Tuple = shape) -> ast.expr:
        node = context.code(term)
        # A check that vanishes on divisibility is ``(check) | (a % t == 0)``.
        check = node.left if isinstance(node, ast.BinOp) else node
        if block_names and not names_in(term) & block_names and isinstance(check, ast.Compare):
            # A scalar condition is compared after broadcasting to the tile:
            # Triton's interpreter rejects masks built from scalar booleans.  A
            # literal or a constexpr size is no Triton tensor, which broadcast_to
            # needs; adding it to a tile of zeros takes either, and a run-time
            # int64 size stays int64 (tl.full would cast it to the tile's type).
            zeros = call("tl.zeros", [copy.deepcopy(shape), dotted("tl.int32")])
            check.left = ast.BinOp(zeros, ast.Add(), check.left)
        return node

    spread = None
    if varying and varying != block_names and not mixed and parameter.source.jagged_dim is None:
        spread = _spread(
            context, view, copy.deepcopy(base), shape, varying, block_names, mask, term_code
        )
    if not mask:
        return (pointers, None), spread
    if mixed:
        return (pointers, separable.conjunction(mask, block_names, term_code)), spread
    return (pointers, _conjunction([term_code(term) for term in mask])), spread


def _spread(
    context: Context,
    view: View,
    pointers: ast.expr,
    shape: ast.Tuple,
    varying: set[str],
    block_names: set[str],
    mask: list[SymbolLike],
    term_code: Callable[[SymbolLike, ast.Tuple], ast.expr],
) -> Spread:
    """The :class:`Spread` of a tile whose ``pointers`` vary along the aranges
    ``varying`` only: the load's mask takes the terms that use no other arange."""
    sliced = ast.Tuple(
        [
            context.code(size)
            if naming.arange(view.parameter.name, view.depth, dim) in varying
            else ast.Constant(1)
            for dim, size in enumerate(tile_shape(context, view))
        ],
        ast.Load(),
    )
    inner = [term for term in mask if names_in(term) & block_names <= varying]
    outer = [term for term in mask if not names_in(term) & block_names <= varying]
    if outer and unselected.keep_is_stored_mask(context, view, outer):
        outer = []  # the lanes it would fill are never stored: no select
    return Spread(
        pointers,
        _conjunction([term_code(term, sliced) for term in inner]) if inner else None,
        _conjunction([term_code(term, shape) for term in outer]) if outer else None,
        copy.deepcopy(shape),
    )


def _conjunction(nodes: list[ast.expr]) -> ast.expr:
    """``nodes[0] & nodes[1] & ...``."""
    result = nodes[0]
    for node in nodes[1:]:
        result = ast.BinOp(result, ast.BitAnd(), node)
    return result


def load(
    context: Context,
    view: View,
    where: PointersAndMask | None = None,
    spread: Spread | None = None,
) -> ast.expr:
    """``tl.load`` of a view's tile (at ``where``, when already computed); loaded once
    along the dimensions its pointers do not vary in when ``spread`` says how."""
    context.loaded.add(view.parameter.name)
    context.add_load(tile_shape(context, view))
    if spread is not None:
        loaded = _masked_load(view, spread.pointers, spread.mask)
        if spread.keep is not None:
            context.uses_spread = True
            other = view.parameter.source.other
            fill = ast.Constant(0 if other is None else other)
            loaded = call(naming.SPREAD, [loaded, spread.keep, fill])
        return call("tl.broadcast_to", [loaded, spread.shape])
    pointers, mask = where or pointers_and_mask(context, view)
    loaded = _masked_load(view, pointers, mask)
    found = descriptors.box(context, view)
    return loaded if found is None else descriptors.load(context, found, loaded)


def _masked_load(view: View, pointers: ast.expr, mask: ast.expr | None) -> ast.expr:
    keywords = []
    if mask is not None:
        keywords.append(ast.keyword("mask", mask))
        other = view.parameter.source.other
        if other is not None:
            keywords.append(ast.keyword("other", ast.Constant(other)))
    return call("tl.load", [pointers], keywords)


def store(
    context: Context, view: View, value: ast.expr, where: PointersAndMask | None = None
) -> ast.stmt:
    """``tl.store`` of ``value`` into a view's tile (at ``where``, when already computed)."""
    context.stored.add(view.parameter.name)
    pointers, mask = where or pointers_and_mask(context, view)
    if (
        view.element is None
        and tile_shape(context, view)
        and not arange_names(view) & set(context.aranges)
    ):
        # A tile of ones is addressed by a scalar pointer, but the value stored
        # may be a block of ones (``ntl.sum(x, 1)`` of a (1, n) tile): give the
        # pointer the tile's shape, which a scalar value broadcasts to as well.
        zeros = call("tl.zeros", [_shape(context, view), dotted("tl.int32")])
        pointers = ast.BinOp(pointers, ast.Add(), zeros)
        if mask is not None:  # of the pointers' shape (the interpreter rejects a scalar's)
            widened = ast.BinOp(copy.deepcopy(zeros), ast.Add(), mask)
            mask = ast.Compare(widened, [ast.NotEq()], [ast.Constant(0)])
    keywords = [ast.keyword("mask", mask)] if mask is not None else []
    stored = ast.Expr(call("tl.store", [pointers, value], keywords))
    found = descriptors.box(context, view)
    return stored if found is None else descriptors.store(context, found, value, stored)


def offsets(context: Context, view: View, dim: int | None) -> ast.expr:
    """``x.offsets(dim)`` and ``x.offsets()`` in an application (upstream's meanings).

    ``x.offsets(dim)`` is the source index along source dimension ``dim`` of
    the tile's elements, as a one-dimensional vector over the tile dimension
    it varies along (a vector of one element when it varies along none: a
    dimension of size 1, as upstream's ``tl.arange(0, 1)``), so upstream's
    ``k.offsets(-2)[None, :]`` broadcasts as written.  ``x.offsets()`` is the
    elements' offsets in the source's memory (indices times strides, summed),
    shaped like the tile.  Of one element of a tile (``x[i].offsets(-1)``, as
    upstream's upsample_linear1d masks with) both are scalars: that element's.
    """
    indices, _ = addressing(context, view)
    block_names = arange_names(view) & set(context.aranges)
    if dim is None:
        total = _memory_offsets(context, view, indices)
        node = context.code(total)
        if view.element is None and not block_names <= names_in(total):
            node = call("tl.broadcast_to", [node, _shape(context, view)])
        return node
    if not -len(indices) <= dim < len(indices):
        raise CodegenError(
            f"{context.spec.label}: {view.parameter.name}.offsets({dim}): the source has "
            f"{len(indices)} dimensions"
        )
    index = indices[dim]
    varying = sorted(names_in(index) & block_names)
    if len(varying) > 1:
        raise CodegenError(
            f"{context.spec.label}: {view.parameter.name}.offsets({dim}): source dimension "
            f"{dim} varies along {len(varying)} dimensions of the tile, so it has no "
            "one-dimensional offsets; use the tile's memory offsets, "
            f"{view.parameter.name}.offsets()"
        )
    if varying and view.level.ndim > 1 and isinstance(index, Symbol):
        index = index.substitute({varying[0]: vector_arange(context, view, varying[0])})
    if not varying and tile_shape(context, view):
        # Upstream's offsets along a tile dimension of size 1 are ``tl.arange(0, 1)``
        # terms, a vector of one element: ``x.offsets(0)[:, None]`` of a (1, n) tile
        # and ``out.source[out.offsets(0)] = ntl.sum(x, 1)`` need its rank.
        ones = call("tl.zeros", [ast.Tuple([ast.Constant(1)], ast.Load()), dotted("tl.int32")])
        return ast.BinOp(context.code(index), ast.Add(), ones)
    return context.code(index)


def _memory_offsets(context: Context, view: View, indices: list[SymbolLike]) -> SymbolLike:
    """Offsets in the source's memory: ``sum(index * stride)`` over the source dimensions."""
    parameter = view.parameter
    total: SymbolLike = 0
    for index, stride in zip(indices, _strides(view)):
        total = total + index * stride
    if parameter.source.jagged_dim is not None:
        total = total + jagged.entry_start(context, view, indices[0])
    return total


def _strides(view: View) -> list[Symbol]:
    parameter = view.parameter
    return [Symbol(naming.stride(parameter.name, d)) for d in range(parameter.source.ndim)]


def _flagger(context: Context, view: View) -> Callable[[separable.Chain], str]:
    """Names the flag of a chain of the view's source dimensions, and notes its condition
    (each stride its divisor times the innermost's) for the host."""
    strides = _strides(view)

    def flag(chain: separable.Chain) -> str:
        name = naming.flat(view.parameter.name, chain.dims)
        inner = strides[chain.dims[-1]]
        condition = " and ".join(
            f"{strides[dim]} == {divisor * inner}"
            for dim, divisor in zip(chain.dims[:-1], chain.divisors[:-1])
        )
        context.flags[name] = Symbol(ast.parse(condition, mode="eval").body)
        return name

    return flag


def _shape(context: Context, view: View) -> ast.Tuple:
    return ast.Tuple([context.code(size) for size in tile_shape(context, view)], ast.Load())
