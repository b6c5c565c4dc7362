"""Symbolic sizes as C expressions, with Python's integer semantics.

Host code computes the grid, the launch checks and the layout flags from
symbols (``ninetoothed.arrangement.symbol``: ``ast`` trees of names, integers, ``+ - *
// % **``, unary minus, comparisons, ``and``/``or``).  The C launcher computes
the same values from the same trees: :func:`to_c` writes one as a C
expression over ``int64_t`` locals, where ``//`` and ``%`` floor as Python's
do (``nt_floordiv``, ``nt_mod`` in the runtime; a zero divisor sets the
runtime's arithmetic error and gives 0, so the call is refused rather than
crashing).  Names are looked up in a mapping to C expressions; a name
without one, or a construct C has no integer equivalent of (``/``), raises
:class:`~ninetoothed.errors.CodegenError` at build time.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ninetoothed.arrangement.symbol import SymbolLike, as_node
from ninetoothed.errors import CodegenError

__all__ = ["to_c"]

INT64_MAX = 2**63 - 1

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}
_COMPARISONS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}


def to_c(value: SymbolLike, names: Mapping[str, str]) -> str:
    """``value`` as a C expression of type ``int64_t`` (comparisons give 0 or 1)."""
    return _node(as_node(value), names)


def _node(node: ast.expr, names: Mapping[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        value = int(node.value)
        if abs(value) > INT64_MAX:
            raise CodegenError(f"the constant {value} does not fit in 64 bits")
        return f"INT64_C({value})" if value >= 0 else f"(-INT64_C({-value}))"
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise CodegenError(
                f"{node.id!r} is known only when the kernel runs from Python; a C library "
                "cannot compute it"
            )
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_node(node.operand, names)})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return f"(!{_node(node.operand, names)})"
    if isinstance(node, ast.BinOp):
        return _binary(node, names)
    if isinstance(node, ast.Compare):
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            symbol = _COMPARISONS.get(type(op))
            if symbol is None:
                raise CodegenError(f"no C form for the comparison {ast.unparse(node)}")
            parts.append(f"({_node(left, names)} {symbol} {_node(right, names)})")
            left = right
        return "(" + " && ".join(parts) + ")"
    if isinstance(node, ast.BoolOp):
        joiner = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joiner.join(f"({_node(v, names)} != 0)" for v in node.values) + ")"
    raise CodegenError(f"no C form for the size expression {ast.unparse(node)}")


def _binary(node: ast.BinOp, names: Mapping[str, str]) -> str:
    left, right = _node(node.left, names), _node(node.right, names)
    symbol = _OPERATORS.get(type(node.op))
    if symbol is not None:
        return f"({left} {symbol} {right})"
    if isinstance(node.op, ast.FloorDiv):
        return f"nt_floordiv({left}, {right})"
    if isinstance(node.op, ast.Mod):
        return f"nt_mod({left}, {right})"
    if isinstance(node.op, ast.Pow):
        return f"nt_pow({left}, {right})"
    if isinstance(node.op, ast.BitAnd):
        return f"({left} & {right})"
    if isinstance(node.op, ast.BitOr):
        return f"({left} | {right})"
    raise CodegenError(f"no integer C form for {ast.unparse(node)}")
