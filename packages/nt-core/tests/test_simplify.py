"""The simplifier keeps values (Python semantics) and makes ceil-divisions Triton-safe."""

from __future__ import annotations

import ast
import operator

from hypothesis import given, settings
from hypothesis import strategies as st

from ninetoothed import Symbol, Tensor
from ninetoothed.arrangement.simplify import simplify

NAMES = ("a", "b", "c")
OPERATIONS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3):
    if depth == 0 or draw(st.booleans()):
        return draw(st.one_of(st.integers(-5, 9), st.sampled_from([Symbol(n) for n in NAMES])))
    left = draw(expressions(depth=depth - 1))
    right = draw(expressions(depth=depth - 1))
    operation = draw(st.sampled_from(list(OPERATIONS)))
    if operation in ("//", "%"):
        right = draw(st.sampled_from([Symbol("b"), 2, 3, 7]))  # b is positive below
    return OPERATIONS[operation](left, right)


@settings(max_examples=300, deadline=None)
@given(expressions(), st.integers(0, 50), st.integers(1, 17), st.integers(-20, 20))
def test_simplify_preserves_value(expression, a, b, c):
    values = {"a": a, "b": b, "c": c}
    original = expression.evaluate(values) if isinstance(expression, Symbol) else expression
    simplified = simplify(expression)
    result = simplified.evaluate(values) if isinstance(simplified, Symbol) else simplified
    assert result == original


def test_tile_count_becomes_a_nonnegative_ceil_division():
    size = Tensor(1, name="x").tile((Symbol("B"),)).shape[0]
    assert str(simplify(size)) == "(x_size_0 + B - 1) // B"


def test_whole_dimension_tile_of_tiles_is_the_count():
    outer = Tensor(2, name="x").tile((Symbol("M"), Symbol("K"))).tile((1, -1))
    assert str(simplify(outer.shape[0])) == "(x_size_0 + M - 1) // M"
    assert outer.shape[1] == 1


@settings(max_examples=300, deadline=None)
@given(expressions(), st.integers(0, 50), st.integers(1, 17), st.integers(-20, 20))
def test_simplified_source_means_the_same(expression, a, b, c):
    """The source text kernels get (``str`` of the simplified expression), run as
    Python, has the original's value: printing keeps precedence and meaning."""
    simplified = simplify(expression)
    if not isinstance(simplified, Symbol):
        return  # folded to an int: nothing printed
    values = {"a": a, "b": b, "c": c}
    original = expression.evaluate(values) if isinstance(expression, Symbol) else expression
    code = compile(ast.parse(str(simplified), mode="eval"), "<simplified>", "eval")
    assert eval(code, {}, values) == original  # noqa: S307


def test_simplified_tile_count_source():
    expression = (Symbol("n") - (Symbol("B") - 1) - 1 + Symbol("B") - 1) // Symbol("B") + 1
    assert str(simplify(expression)) == "(n + B - 1) // B"
