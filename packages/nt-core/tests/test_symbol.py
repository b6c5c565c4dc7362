"""Symbols: expression building, printing, folding, kinds and errors."""

from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ninetoothed import Symbol, Tensor, block_size
from ninetoothed.arrangement.symbol import evaluate

NAMES = ("a", "b", "c")

BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "/": operator.truediv,
}

COMPARISONS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def outcome(compute):
    """``compute()``, or the type of the arithmetic error it raises (division by zero)."""
    try:
        return compute()
    except ZeroDivisionError as error:
        return type(error)


@st.composite
def expressions(draw, depth=3):
    """A pair ``(built, plain)``: an expression built from symbols and ints with
    Python operators, and a function computing the same expression on plain
    numbers, given a value per name."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            name = draw(st.sampled_from(NAMES))
            return Symbol(name), lambda values, name=name: values[name]
        number = draw(st.integers(-3, 5))
        return number, lambda values, number=number: number
    if draw(st.integers(0, 5)) == 0:
        built, plain = draw(expressions(depth - 1))
        return -built, lambda values: -plain(values)
    symbol = draw(st.sampled_from(sorted(BINARY)))
    function = BINARY[symbol]
    left, left_plain = draw(expressions(depth - 1))
    right, right_plain = draw(expressions(depth - 1))
    if symbol in ("//", "%", "/") and right == 0 and not isinstance(left, Symbol):
        # Plain ints fold as the expression is built: keep that from dividing by zero.
        right, right_plain = 1, lambda values: 1
    return function(left, right), lambda values: function(left_plain(values), right_plain(values))


@st.composite
def expressions_and_comparisons(draw):
    """An expression, possibly compared with another one at the top."""
    built, plain = draw(expressions())
    if draw(st.booleans()):
        function = COMPARISONS[draw(st.sampled_from(sorted(COMPARISONS)))]
        other, other_plain = draw(expressions())
        return function(built, other), lambda values: function(plain(values), other_plain(values))
    return built, plain


VALUES = st.fixed_dictionaries({name: st.integers(-6, 9) for name in NAMES})


@settings(max_examples=300, deadline=None)
@given(expressions_and_comparisons(), VALUES)
def test_printed_expression_evaluates_like_evaluate(pair, values):
    built, _ = pair
    printed = str(built)
    assert outcome(lambda: eval(printed, {}, dict(values))) == outcome(
        lambda: evaluate(built, values)
    ), printed


@settings(max_examples=300, deadline=None)
@given(expressions_and_comparisons(), VALUES)
def test_symbolic_arithmetic_agrees_with_plain_numbers(pair, values):
    """Folding (``x * 1``, ``x % 1`` …) may drop a division by zero, nothing else."""
    built, plain = pair
    expected = outcome(lambda: plain(values))
    if expected is ZeroDivisionError:
        return
    assert evaluate(built, values) == expected, str(built)


def test_product_of_symbols_prints_as_in_the_seed():
    assert str(Symbol("BLOCK_SIZE_M") * Symbol("BLOCK_SIZE_N")) == "BLOCK_SIZE_M * BLOCK_SIZE_N"
    assert repr(Symbol("BLOCK_SIZE_M")) == "BLOCK_SIZE_M"


@pytest.mark.parametrize(
    ("build", "printed"),
    [
        (lambda a, b: a - (b - 1), "a - (b - 1)"),
        (lambda a, b: (a + b) * 2, "(a + b) * 2"),
        (lambda a, b: -(a + b), "-(a + b)"),
        (lambda a, b: 2 - a, "2 - a"),
        (lambda a, b: 7 // a, "7 // a"),
        (lambda a, b: 7 % a, "7 % a"),
        (lambda a, b: a / b, "a / b"),
        (lambda a, b: a < b, "a < b"),
        (lambda a, b: 3 < a, "a > 3"),
        (lambda a, b: a.eq(b), "a == b"),
        (lambda a, b: a.ne(b + 1), "a != b + 1"),
    ],
)
def test_printed_form(build, printed):
    assert str(build(Symbol("a"), Symbol("b"))) == printed


def test_arithmetic_on_concrete_sizes_folds_to_ints():
    shape = Tensor(shape=(4, 8)).tile((2, 2)).shape
    assert shape == (2, 4)
    assert all(type(size) is int for size in shape)
    folded = (Symbol("a") * 2 + Symbol("b")).substitute({"a": 3, "b": 4})
    assert folded == 10 and type(folded) is int


def test_operations_with_a_symbol_do_not_fold_even_when_it_is_a_constant():
    three = Symbol(3)
    result = three + 1
    assert isinstance(result, Symbol)
    assert str(result) == "3 + 1"
    assert evaluate(result, {}) == 4


def test_substitute_folds_only_what_becomes_constant():
    expression = Symbol("a") * Symbol("b") + 1
    partial = expression.substitute({"a": 2})
    assert isinstance(partial, Symbol) and str(partial) == "2 * b + 1"
    assert expression.substitute({"a": 2, "b": 5}) == 11


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda a: a * 1, "a"),
        (lambda a: 1 * a, "a"),
        (lambda a: a + 0, "a"),
        (lambda a: 0 + a, "a"),
        (lambda a: a - 0, "a"),
        (lambda a: a // 1, "a"),
        (lambda a: +a, "a"),
    ],
)
def test_identities_return_the_operand(build, expected):
    a = Symbol("a")
    result = build(a)
    assert isinstance(result, Symbol) and str(result) == expected


@pytest.mark.parametrize("build", [lambda a: a * 0, lambda a: 0 * a, lambda a: a % 1])
def test_identities_that_give_zero(build):
    result = build(Symbol("a"))
    assert result == 0 and type(result) is int


@pytest.mark.parametrize(
    ("build", "expected"),
    [(lambda a, b: a / b // 1, 1.0), (lambda a, b: a / b % 1, 0.5), (lambda a, b: a / b * 1, 1.5)],
)
def test_identities_keep_the_value_of_true_division(build, expected):
    """``x // 1 == x`` and ``x % 1 == 0`` hold for integers only; ``a / b`` is not one."""
    assert evaluate(build(Symbol("a"), Symbol("b")), {"a": 3, "b": 2}) == expected


def test_subtracting_from_zero_is_not_an_identity():
    assert str(0 - Symbol("a")) == "0 - a"


def test_structural_equality_and_hashing():
    assert Symbol("a") + 1 == Symbol("a") + 1
    assert Symbol("a") + 1 != 1 + Symbol("a")
    assert len({Symbol("a"), Symbol("a"), Symbol("b")}) == 2


def test_names_and_free_symbols():
    a = Symbol("a", meta=True)
    expression = a * Symbol("b") + 2
    assert expression.names() == {"a", "b"}
    assert expression.free_symbols["a"] is a
    assert expression.name is None
    assert a.name == "a"


@pytest.mark.parametrize(
    ("kind", "meta", "constexpr"),
    [({"meta": True}, True, False), ({"constexpr": True}, False, True), ({}, False, False)],
)
def test_kind_flags(kind, meta, constexpr):
    symbol = Symbol("S", **kind)
    assert (symbol.meta, symbol.constexpr) == (meta, constexpr)
    assert symbol.is_runtime() == (not meta and not constexpr)


def test_an_expression_is_runtime_when_any_name_in_it_is():
    meta = Symbol("M", meta=True)
    constexpr = Symbol("C", constexpr=True)
    runtime = Symbol("R")
    assert not (meta * constexpr + 1).is_runtime()
    assert (meta * constexpr + runtime).is_runtime()


def test_copying_a_symbol_keeps_its_expression():
    original = Symbol("a") + 1
    assert Symbol(original) == original
    assert Symbol(original, meta=True).meta


def test_block_size_gives_unique_meta_power_of_two_symbols():
    sizes = [block_size() for _ in range(5)]
    assert len({size.name for size in sizes}) == 5
    for size in sizes:
        assert size.name.isidentifier()
        assert size.meta and not size.constexpr
        assert size.power_of_two and size.is_power_of_two()
        assert (size.lower_bound, size.upper_bound) == (16, 1024)


def test_block_size_bounds():
    size = block_size(lower_bound=32, upper_bound=64)
    assert (size.lower_bound, size.upper_bound) == (32, 64)


def test_power_of_two_is_kept_by_products_only():
    m, n = block_size(), block_size()
    assert (m * n * 2).is_power_of_two()
    assert not (m * 3).is_power_of_two()
    assert not (m + n).is_power_of_two()
    assert not Symbol("x").is_power_of_two()


def test_evaluate_names_the_missing_values():
    with pytest.raises(KeyError, match="b, c"):
        (Symbol("a") + Symbol("b") * Symbol("c")).evaluate({"a": 1})


def test_meta_and_constexpr_is_a_meta_symbol():
    # Upstream: a meta symbol is a constexpr already (auto-tuned, not given).
    symbol = Symbol("BLOCK", meta=True, constexpr=True)
    assert (symbol.meta, symbol.constexpr) == (True, False)
    assert not symbol.is_runtime()


def test_options_in_upstreams_positional_order():
    symbol = Symbol("B", None, True, 16, 64, False)
    assert (symbol.constexpr, symbol.meta) == (False, True)
    assert (symbol.lower_bound, symbol.upper_bound, symbol.power_of_two) == (16, 64, False)
    assert Symbol("C", True).constexpr


@pytest.mark.parametrize("name", ["1abc", "a b", "", "a-b"])
def test_bad_name(name):
    with pytest.raises(ValueError, match="identifier"):
        Symbol(name)


@pytest.mark.parametrize("value", [True, 1.5, None, "a b".split()])
def test_symbol_from_unsupported_value(value):
    with pytest.raises(TypeError, match=type(value).__name__):
        Symbol(value)


def test_lower_bound_above_upper_bound():
    with pytest.raises(ValueError, match="lower_bound 64 exceeds upper_bound 32"):
        Symbol("B", meta=True, lower_bound=64, upper_bound=32)


@pytest.mark.parametrize("build", [lambda a: a, lambda a: a < 3, lambda a: a.eq(1)])
def test_truth_value_of_a_symbol_is_an_error(build):
    expression = build(Symbol("a"))
    with pytest.raises(TypeError, match="truth value.*unknown until run time"):
        bool(expression)


def test_a_symbol_is_no_compile_time_integer():
    with pytest.raises(TypeError, match="no integer value"):
        range(Symbol("a"))


@pytest.mark.parametrize("other", ["x", 1.5j, True, None])
def test_arithmetic_with_unsupported_operand(other):
    with pytest.raises(TypeError, match="needs ints or Symbols"):
        Symbol("a") + other
