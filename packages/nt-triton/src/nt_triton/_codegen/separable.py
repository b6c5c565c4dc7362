"""Index arithmetic a GPU repeats least: separable offsets and masks, bounds that hold.

A tile's memory offsets are ``sum(index * stride)`` over the source's
dimensions.  Where one index mixes several tile dimensions (an implicit
GEMM's input row ``p + r``: ``p`` from the output position, a row of the
tile, ``r`` from the filter, a column), or several indices vary along one
(the filter's ``c``, ``r`` and ``s``), the sum as written costs several
operations per *element* of the tile, each iteration of the loop over
``k``.  :func:`offsets` distributes the strides over such sums and adds the
terms up per group of tile dimensions they vary along: scalars and terms of
the rows first (a column vector, loop-invariant in a GEMM, so Triton hoists
it), then those of the columns (a row vector), then only what varies along
both; one add per element remains.  :func:`conjunction` orders a mask's terms
the same way.  :func:`below` proves ``value < bound`` where ``value`` is a sum
of remainders (``p % P + r % R < P + R - 1``), so a convolution without
padding checks no input row or column against the input's size.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ninetoothed.arrangement.simplify import simplify
from ninetoothed.arrangement.symbol import Symbol, SymbolLike, binary

__all__ = ["Chain", "Group", "below", "chains", "conjunction", "offsets", "tangled"]

Group = tuple[str, ...]


def tangled(indices: Sequence[SymbolLike], dims: set[str]) -> bool:
    """Whether summing ``index * stride`` as written repeats work per element: some
    index varies along several of the tile's dimensions ``dims`` (an input window's
    ``p + r``), or several indices along the same one (a filter's ``c``, ``r`` and
    ``s``, all of the reduction).  A matrix's ``(i, j)`` is not tangled."""
    groups = [_group(index, dims) for index in indices]
    varying = [group for group in groups if group]
    return any(len(group) > 1 for group in varying) or len(set(varying)) < len(varying)


def offsets(
    indices: Sequence[SymbolLike],
    strides: Sequence[SymbolLike],
    dims: set[str],
    code: Callable[[SymbolLike], ast.expr],
    flag: Callable[[Chain], str],
) -> ast.expr | None:
    """``sum(index * stride)`` as code summed per group of tile dimensions (``dims``:
    the aranges' names), or None when it cannot be taken apart.  A :class:`Chain`'s
    offsets are ``whole * stride`` where the flag ``flag(chain)`` names says its
    dimensions lie as one block (the host decides per call), as written elsewhere."""
    found = chains(indices, dims)
    chained = {dim for chain in found for dim in chain.dims}
    groups: dict[Group, list[ast.expr]] = {}
    for dim, (index, stride) in enumerate(zip(indices, strides)):
        terms = [] if dim in chained else _terms(index * stride)
        if terms is None:
            return None
        for term in terms:
            if not (isinstance(term, int) and term == 0):
                groups.setdefault(_group(term, dims), []).append(code(term))
    for chain in found:
        written = _sum([code(indices[dim] * strides[dim]) for dim in chain.dims])
        flat = code(chain.whole * strides[chain.dims[-1]])
        test = ast.Name(flag(chain), ast.Load())
        groups.setdefault(_group(chain.whole, dims), []).append(ast.IfExp(test, flat, written))
    if not groups:
        return None
    return _sum([_sum(groups[key]) for key in _order(groups)])


def conjunction(
    terms: Sequence[SymbolLike], dims: set[str], code: Callable[[SymbolLike], ast.expr]
) -> ast.expr:
    """The mask's terms and-ed per group of tile dimensions, like :func:`offsets`."""
    groups: dict[Group, list[ast.expr]] = {}
    for term in terms:
        groups.setdefault(_group(term, dims), []).append(code(term))
    parts = [_fold(groups[key], ast.BitAnd()) for key in _order(groups)]
    return _fold(parts, ast.BitAnd())


def below(value: SymbolLike, bound: SymbolLike) -> bool:
    """Whether ``value < bound`` always holds: ``value``'s largest value, a sum of
    remainders by sizes (``x % n <= n - 1``) and constants, is less than ``bound``."""
    largest = _largest(value)
    if largest is None:
        return False
    margin = simplify(bound - largest)
    return isinstance(margin, int) and margin > 0


def _names(value: SymbolLike) -> set[str]:
    return value.names() if isinstance(value, Symbol) else set()


def _group(term: SymbolLike, dims: set[str]) -> Group:
    return tuple(sorted(_names(term) & dims))


def _order(groups: dict[Group, list]) -> list[Group]:  # type: ignore[type-arg]
    """Scalars, then one dimension at a time, then the mixed groups."""
    return sorted(groups, key=lambda key: (len(key) > 1, len(key), key))


def _sum(nodes: list[ast.expr]) -> ast.expr:
    return _fold(nodes, ast.Add())


def _fold(nodes: list[ast.expr], op: ast.operator) -> ast.expr:
    result = nodes[0]
    for node in nodes[1:]:
        result = ast.BinOp(left=result, op=op, right=node)
    return result


def _terms(value: SymbolLike) -> list[SymbolLike] | None:
    """``value`` as a list of terms that sum to it: products distributed over sums
    (one factor a single term); None when some part is not integer arithmetic."""
    if not isinstance(value, Symbol):
        return [value]
    free = value.free_symbols
    return _node_terms(value.node, free)


def _node_terms(node: ast.expr, free: dict[str, Symbol]) -> list[SymbolLike] | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _node_terms(node.left, free), _node_terms(node.right, free)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Sub):
            right = [-term for term in right]
        return left + right
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _node_terms(node.operand, free)
        return None if operand is None else [-term for term in operand]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _node_terms(node.left, free), _node_terms(node.right, free)
        if left is None or right is None:
            return None
        if len(left) == 1 or len(right) == 1:
            return [a * b for a in left for b in right]
    whole = _rebuild(node, free)
    return None if whole is None else [whole]


def _rebuild(node: ast.expr, free: dict[str, Symbol]) -> SymbolLike | None:
    """The symbol of an integer-arithmetic node (None for anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return free.get(node.id, Symbol(node.id))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _rebuild(node.operand, free)
        return None if operand is None else -operand
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
    ):
        left, right = _rebuild(node.left, free), _rebuild(node.right, free)
        if left is None or right is None:
            return None
        return binary(node.op, left, right)
    return None


def _largest(value: SymbolLike) -> SymbolLike | None:
    """An upper bound of ``value``: constants, and remainders by sizes, summed."""
    if not isinstance(value, Symbol):
        return value
    return _largest_node(value.node, value.free_symbols)


def _largest_node(node: ast.expr, free: dict[str, Symbol]) -> SymbolLike | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if not isinstance(node, ast.BinOp):
        return None
    if isinstance(node.op, ast.Mod):
        # An index's remainder is by a dimension's size, which is positive where
        # any element exists (a dimension of size 0 has no element to mask).
        size = _rebuild(node.right, free)
        return None if size is None else size - 1
    left = _largest_node(node.left, free)
    if left is None:
        return None
    if isinstance(node.op, ast.Add):
        right = _largest_node(node.right, free)
        return None if right is None else left + right
    if isinstance(node.op, (ast.Sub, ast.Mult)):
        # Only by a constant: subtracting or scaling by a symbol needs its range.
        factor = node.right
        if isinstance(factor, ast.Constant) and isinstance(factor.value, int):
            if isinstance(node.op, ast.Sub):
                return left - factor.value
            if factor.value >= 0:
                return left * factor.value
    return None


class Chain(NamedTuple):
    """Indices of several source dimensions that take one index apart (a flatten's):
    ``whole // divisor % size`` each, the innermost ``whole % size``, the outermost
    without a remainder.  Their offsets sum to ``whole * stride`` of the innermost
    dimension when each stride is its divisor times that one (a contiguous block)."""

    dims: tuple[int, ...]
    """The source dimensions, outermost first."""
    whole: SymbolLike
    divisors: tuple[SymbolLike, ...]
    """Per dimension, the product of the sizes inside it (1 for the innermost)."""


def chains(indices: Sequence[SymbolLike], dims: set[str]) -> list[Chain]:
    """The chains among ``indices`` whose whole index varies along the tile (``dims``)."""
    parts: dict[str, tuple[SymbolLike, list[tuple[int, SymbolLike, SymbolLike | None]]]] = {}
    for dim, index in enumerate(indices):
        parsed = _taken_apart(index)
        if parsed is not None and _names(parsed[0]) & dims:
            whole, divisor, size = parsed
            parts.setdefault(str(whole), (whole, []))[1].append((dim, divisor, size))
    found = []
    for whole, entries in parts.values():
        linked = _link(entries)
        if linked is not None:
            found.append(Chain(tuple(d for d, _ in linked), whole, tuple(v for _, v in linked)))
    return found


def _taken_apart(index: SymbolLike) -> tuple[SymbolLike, SymbolLike, SymbolLike | None] | None:
    """``(whole, divisor, size)`` of ``whole // divisor % size`` (either part optional)."""
    if not isinstance(index, Symbol):
        return None
    node, free = index.node, index.free_symbols
    size = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        size = _rebuild(node.right, free)
        node = node.left
    divisor: SymbolLike | None = 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        divisor = _rebuild(node.right, free)
        node = node.left
    whole = _rebuild(node, free)
    if whole is None or divisor is None or (size is None and divisor == 1):
        return None
    return whole, divisor, size


def _link(
    entries: list[tuple[int, SymbolLike, SymbolLike | None]],
) -> list[tuple[int, SymbolLike]] | None:
    """``(dim, divisor)`` from the outermost to the innermost, if the entries chain."""
    by_divisor = {str(divisor): (dim, divisor, size) for dim, divisor, size in entries}
    if len(by_divisor) < 2 or "1" not in by_divisor:
        return None
    linked: list[tuple[int, SymbolLike]] = []
    divisor: SymbolLike = 1
    while True:
        entry = by_divisor.get(str(divisor))
        if entry is None:
            return None
        dim, _, size = entry
        linked.append((dim, divisor))
        if size is None:
            return linked[::-1]
        divisor = size if divisor == 1 else divisor * size
