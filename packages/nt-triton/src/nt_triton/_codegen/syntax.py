"""Small builders of Python AST nodes, for the code generator's stages."""

from __future__ import annotations

import ast

__all__ = ["assign", "call", "constant_int", "dotted"]


def dotted(path: str) -> ast.expr:
    """The expression ``a.b.c`` for ``"a.b.c"``."""
    return ast.parse(path, mode="eval").body


def call(
    function: str, args: list[ast.expr], keywords: list[ast.keyword] | None = None
) -> ast.Call:
    """``function(*args, **keywords)``, ``function`` a dotted path."""
    return ast.Call(func=dotted(function), args=args, keywords=keywords or [])


def assign(name: str, value: ast.expr) -> ast.stmt:
    """``name = value``."""
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value, lineno=0)


def constant_int(node: ast.expr) -> int | None:
    """The value of an integer literal (``3``, ``-1``), or ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
    ):
        return -node.operand.value
    return None
