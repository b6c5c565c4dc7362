"""Integer arithmetic on expression trees: what symbols fold with and evaluate to.

A :class:`~ninetoothed.arrangement.symbol.Symbol` is an ``ast.expr``; the
operators here give each node kind its meaning on concrete integers, both
when arithmetic on literals folds to a literal and when an expression is
evaluated with values for its names.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import cast

__all__ = ["BINARY_OPERATORS", "COMPARISON_OPERATORS", "evaluate_node"]

BINARY_OPERATORS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}

COMPARISON_OPERATORS: dict[type[ast.cmpop], Callable[[int, int], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


def evaluate_node(node: ast.expr, values: Mapping[str, int]) -> int:
    """The value of an integer expression tree, given values for its names."""
    if isinstance(node, ast.Constant):
        return cast(int, node.value)  # symbols hold numbers only
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.BinOp):
        return BINARY_OPERATORS[type(node.op)](
            evaluate_node(node.left, values), evaluate_node(node.right, values)
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate_node(node.operand, values)
    if isinstance(node, ast.Compare):
        return COMPARISON_OPERATORS[type(node.ops[0])](
            evaluate_node(node.left, values), evaluate_node(node.comparators[0], values)
        )
    raise TypeError(f"cannot evaluate {ast.unparse(node)}")
