"""Algebraic clean-up of index expressions before they become Triton code.

Arrangements build sizes and indices the long way round (the tile formula
``(n - (B - 1) - 1 + B - 1) // B + 1``).  Two rewrites make the generated
code what an expert would write, and keep it right under Triton's integer
division, which truncates toward zero where Python's floors:

* sums are collected into ``atom * coefficient`` terms plus a constant, so
  ``n - (B - 1) - 1 + B - 1`` becomes ``n - 1``;
* ``A // s + c`` becomes ``(A + c * s) // s`` (an identity of floor division
  for positive ``s``), so ``(n - 1) // B + 1`` becomes ``(n + B - 1) // B``,
  whose numerator is non-negative for every size ``n >= 0``.
"""

from __future__ import annotations

import ast
from typing import cast

from ninetoothed.arrangement.symbol import Symbol, SymbolLike, binary, compare

__all__ = ["simplify"]


def simplify(value: SymbolLike) -> SymbolLike:
    """An equal, simpler expression (an ``int`` when it folds to one)."""
    if not isinstance(value, Symbol):
        return value
    return _simplify(value.node, value.free_symbols)


def _simplify(node: ast.expr, free: dict[str, Symbol]) -> SymbolLike:
    if isinstance(node, ast.Constant):
        return cast(int, node.value)  # symbols hold numbers only
    if isinstance(node, ast.Name):
        return free[node.id] if node.id in free else Symbol(node.id)
    if isinstance(node, (ast.BinOp, ast.UnaryOp)) and _is_linear(node):
        terms, constant = _linear_terms(node, free)
        return _rebuild_sum(terms, constant)
    if isinstance(node, ast.BinOp):
        left = _simplify(node.left, free)
        right = _simplify(node.right, free)
        return binary(node.op, left, right)
    if isinstance(node, ast.Compare):
        return compare(
            node.ops[0], _simplify(node.left, free), _simplify(node.comparators[0], free)
        )
    return Symbol(node)


def _node(value: SymbolLike) -> ast.expr:
    return value.node if isinstance(value, Symbol) else ast.Constant(value)


def _is_linear(node: ast.expr) -> bool:
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.Add, ast.Sub, ast.Mult))
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)


Terms = dict[str, tuple[SymbolLike, int]]


def _linear_terms(node: ast.expr, free: dict[str, Symbol]) -> tuple[Terms, int]:
    """``node`` as ``sum(atom * coefficient) + constant``, atoms keyed by their dump."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left_terms, left_constant = _linear_terms(node.left, free)
        right_terms, right_constant = _linear_terms(node.right, free)
        sign = 1 if isinstance(node.op, ast.Add) else -1
        terms = dict(left_terms)
        for key, (atom, coefficient) in right_terms.items():
            previous = terms.get(key, (atom, 0))[1]
            terms[key] = (atom, previous + sign * coefficient)
        return terms, left_constant + sign * right_constant
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        terms, constant = _linear_terms(node.operand, free)
        return {k: (a, -c) for k, (a, c) in terms.items()}, -constant
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left_terms, left_constant = _linear_terms(node.left, free)
        right_terms, right_constant = _linear_terms(node.right, free)
        if not left_terms:
            return {k: (a, c * left_constant) for k, (a, c) in right_terms.items()}, (
                left_constant * right_constant
            )
        if not right_terms:
            return {k: (a, c * right_constant) for k, (a, c) in left_terms.items()}, (
                left_constant * right_constant
            )
        product = binary(
            ast.Mult(),
            _rebuild_sum(left_terms, left_constant),
            _rebuild_sum(right_terms, right_constant),
        )
        return _atom(product)
    value = _simplify_atom(node, free)
    if isinstance(value, int):
        return {}, value
    if isinstance(value.node, ast.BinOp) and _is_linear(value.node):
        return _linear_terms(value.node, value.free_symbols)
    return _atom(value)


def _atom(value: SymbolLike) -> tuple[Terms, int]:
    if isinstance(value, int):
        return {}, value
    return {ast.dump(value.node): (value, 1)}, 0


def _simplify_atom(node: ast.expr, free: dict[str, Symbol]) -> SymbolLike:
    """Simplify a non-linear node (a name, ``//``, ``%`` …)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        numerator = _simplify(node.left, free)
        denominator = _simplify(node.right, free)
        return binary(ast.FloorDiv(), numerator, denominator)
    return _simplify(node, free) if not _is_linear(node) else Symbol(node)


def _rebuild_sum(terms: Terms, constant: int) -> SymbolLike:
    # ``A // s + c`` → ``(A + c * s) // s``: fold the constant into one floor
    # division when there is exactly one (keeps numerators non-negative).
    live = [(atom, coefficient) for atom, coefficient in terms.values() if coefficient != 0]
    if constant != 0 and len(live) == 1 and live[0][1] == 1:
        atom = live[0][0]
        if (
            isinstance(atom, Symbol)
            and isinstance(atom.node, ast.BinOp)
            and isinstance(atom.node.op, ast.FloorDiv)
        ):
            free = atom.free_symbols
            numerator = _simplify(atom.node.left, free)
            denominator = _simplify(atom.node.right, free)
            if _is_positive(denominator):
                folded = simplify(numerator + constant * denominator)
                return binary(ast.FloorDiv(), folded, denominator)
    result: SymbolLike = 0
    positives = [(a, c) for a, c in live if c > 0]
    negatives = [(a, c) for a, c in live if c < 0]
    for atom, coefficient in positives:
        result = result + atom * coefficient
    for atom, coefficient in negatives:
        result = result - atom * (-coefficient)
    if constant > 0:
        result = result + constant
    elif constant < 0:
        result = result - (-constant)
    return result


def _is_positive(value: SymbolLike) -> bool:
    """Whether ``value`` is known positive: a positive int, or a size-like symbol."""
    if isinstance(value, int):
        return value > 0
    # Symbols used as divisors in arrangements are tile sizes and strides,
    # which meta-operations require to be positive.
    return isinstance(value.node, ast.Name) or (
        isinstance(value.node, ast.BinOp)
        and isinstance(value.node.op, ast.Mult)
        and _is_positive(_simplify(value.node.left, value.free_symbols))
        and _is_positive(_simplify(value.node.right, value.free_symbols))
    )
