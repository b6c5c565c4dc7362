"""Tensor-descriptor (TMA) loads and stores of tiles that are boxes of their source.

A persistent program (``make(..., persistent=True)``) loads and stores its tiles
through tensor descriptors where it can: ``tl.make_tensor_descriptor`` once per
program, then ``descriptor.load([...])`` and ``descriptor.store([...], value)`` per
tile.  On Hopper the copies then run on the tensor memory accelerator instead of as
one address and one predicate per element; on an H200 the generated persistent
matrix product gained 1.5-2.5% from it (``docs/design.md``).

A tile qualifies when it is a *box* of its source:

* each source dimension's index is a start plus at most one of the tile's aranges
  (coefficient 1), and each arange is in one index, in the source's order;
* every mask term is a source dimension's bound (``index < size``, folded or not):
  the box is clipped to the source by the copy itself, which fills zeros outside it
  on loads and writes nothing outside it on stores;
* the source's ``other`` is none or zero, it is not jagged, and the tile is not one
  element of a level.

Whether a call may take them is the host's to say, per tensor, through a constexpr
flag (:data:`nt_triton._abi.ParameterKind.DESCRIPTOR_FLAG`): the innermost stride
is 1, the others and the address are 16-byte aligned, no 64-bit offsets, a GPU that
has the copies, and a launch that gives the scratch memory descriptors made in a
kernel need (:mod:`nt_triton._describable`).  Each load and store keeps its pointer
form in the other branch of a compile-time choice, which also checks what only the
configuration fixes: every block side at most 256 and an innermost side of a
multiple of 16 bytes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from nt_triton._codegen import naming, persistent_loop
from nt_triton._codegen.addressing import sourced_addressing
from nt_triton._codegen.context import Context, names_in
from nt_triton._codegen.geometry import arange_names, tile_shape
from nt_triton._codegen.syntax import call
from nt_triton._codegen.views import View

__all__ = ["Box", "box", "load", "store"]

LARGEST_SIDE = 256
"""The longest side a tensor descriptor's block may have (a TMA box's limit)."""


@dataclass(frozen=True)
class Box:
    """A tile that is a box of its source: what a descriptor load or store of it needs."""

    parameter: str
    starts: tuple[SymbolLike, ...]
    """Per source dimension, the index of the box's first element."""
    block: tuple[SymbolLike, ...]
    """Per source dimension, the box's side (1 where the tile does not vary along it)."""
    tile: tuple[SymbolLike, ...]
    """The tile's shape (the box's sides in order, with the tile's own dimensions of 1)."""


def box(context: Context, view: View) -> Box | None:
    """The :class:`Box` of ``view``'s tile, or None where it is not one (or the kernel
    is not persistent: only persistent programs make descriptors)."""
    parameter = view.parameter
    source = parameter.source
    if (
        not persistent_loop.requested(context.spec)
        or view.element is not None
        or source.jagged_dim is not None
        or source.other not in (None, 0)
        or not 1 <= source.ndim <= 5
    ):
        return None
    indices, _, sourced = sourced_addressing(context, view)
    if not all(sourced):  # a mask of False is no source bound either
        return None
    shape = tile_shape(context, view)
    block_names = arange_names(view) & set(context.aranges)
    dims = {naming.arange(parameter.name, view.depth, d): d for d in range(len(shape))}
    starts: list[SymbolLike] = []
    block: list[SymbolLike] = []
    order: list[int] = []
    seen: set[str] = set()
    for index in indices:
        names = names_in(index) & block_names
        if len(names) > 1 or names & seen:
            return None
        if not names:
            starts.append(index)
            block.append(1)
            continue
        (name,) = names
        start = _start(index, name)
        if start is None:
            return None
        seen.add(name)
        starts.append(start)
        block.append(shape[dims[name]])
        order.append(dims[name])
    if not seen or seen != block_names or order != sorted(order):
        return None
    return Box(parameter.name, tuple(starts), tuple(block), shape)


def _start(index: SymbolLike, name: str) -> SymbolLike | None:
    """``start`` where ``index`` is ``start + name`` (``name`` not in ``start``), else None."""
    if not isinstance(index, Symbol):
        return None
    terms: list[ast.expr] = []
    node = index.node
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        terms.append(node.right)
        node = node.left
    terms.append(node)
    arange = [t for t in terms if isinstance(t, ast.Name) and t.id == name]
    if len(arange) != 1:
        return None
    start = index.substitute({name: 0})
    if name in names_in(start):
        return None
    return start


def load(context: Context, found: Box, fallback: ast.expr) -> ast.expr:
    """``(<descriptor load> if <it may> else fallback)``: a compile-time choice."""
    descriptor = _descriptor(context, found)
    loaded: ast.expr = call(
        f"{descriptor}.load", [ast.List([context.code(s) for s in found.starts], ast.Load())]
    )
    if list(found.tile) != list(found.block):
        loaded = call("tl.reshape", [loaded, _tuple(context, found.tile)])
    return ast.IfExp(test=_condition(context, found), body=loaded, orelse=fallback)


def store(context: Context, found: Box, value: ast.expr, fallback: ast.stmt) -> ast.stmt:
    """``if <it may>: <descriptor store> else: fallback``, a compile-time choice.

    The value is cast to the source's type (``tl.store`` casts implicitly) and
    broadcast to the tile (a scalar stored to every element) first."""
    descriptor = _descriptor(context, found)
    element = ast.parse(f"{naming.pointer(found.parameter)}.dtype.element_ty", mode="eval").body
    value = call("tl.cast", [value, element])
    value = call("tl.broadcast_to", [value, _tuple(context, found.tile)])
    if list(found.tile) != list(found.block):
        value = call("tl.reshape", [value, _tuple(context, found.block)])
    stored = call(
        f"{descriptor}.store",
        [ast.List([context.code(s) for s in found.starts], ast.Load()), value],
    )
    return ast.If(test=_condition(context, found), body=[ast.Expr(stored)], orelse=[fallback])


def _descriptor(context: Context, found: Box) -> str:
    """The name of the program's descriptor of ``found``'s source and block (made in
    the prologue, under the same compile-time choice)."""
    key = (found.parameter, tuple(str(b) for b in found.block))
    name = context.descriptors.get(key)
    if name is not None:
        return name
    name = naming.numbered(f"{found.parameter}_descriptor", len(context.descriptors))
    index = next(
        i for i, p in enumerate(context.spec.tensor_parameters) if p.name == found.parameter
    )
    context.descriptor_flags.setdefault(naming.descriptor_flag(found.parameter), index)
    ndim = len(found.block)
    sizes = [naming.size(found.parameter, d) for d in range(ndim)]
    strides = [naming.stride(found.parameter, d) for d in range(ndim - 1)]
    context.used_names |= set(sizes) | set(strides)
    block = ", ".join(ast.unparse(context.code(b)) for b in found.block)
    made = (
        f"{name} = tl.make_tensor_descriptor({naming.pointer(found.parameter)}, "
        f"shape=[{', '.join(sizes)}], strides=[{', '.join([*strides, '1'])}], "
        f"block_shape=[{block}])"
    )
    condition = ast.unparse(_condition(context, found))
    context.descriptor_lines += [f"if {condition}:", f"    {made}"]
    context.descriptors[key] = name
    return name


def _condition(context: Context, found: Box) -> ast.expr:
    """The compile-time condition: the host's flag, every side at most
    :data:`LARGEST_SIDE`, an innermost side of a multiple of 16 bytes."""
    terms = [naming.descriptor_flag(found.parameter)]
    for side in found.block:
        if isinstance(side, int):
            if side > LARGEST_SIDE:
                terms.append("False")
            continue
        terms.append(f"({ast.unparse(context.code(side))} <= {LARGEST_SIDE})")
    inner = ast.unparse(context.code(found.block[-1]))
    element = f"{naming.pointer(found.parameter)}.dtype.element_ty.primitive_bitwidth"
    terms.append(f"({inner} * {element} % 128 == 0)")
    return ast.parse(" & ".join(terms), mode="eval").body


def _tuple(context: Context, sizes: tuple[SymbolLike, ...]) -> ast.Tuple:
    return ast.Tuple([context.code(s) for s in sizes], ast.Load())
