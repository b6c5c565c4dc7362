"""Symbols: integer expressions built on Python's ``ast``.

A :class:`Symbol` wraps an ``ast.expr``.  Arithmetic on symbols builds bigger
expression trees, which print with :func:`ast.unparse` (so they read like the
Python, and Triton, source they will become) and evaluate on concrete values.
Arithmetic whose operands are all plain integers folds to a plain integer, so
``Tensor(shape=(4, 8)).tile((2, 2)).shape == (2, 4)``.

Each named symbol carries its kind:

* ``meta=True``: a compile-time value chosen by auto-tuning;
* ``constexpr=True``: a compile-time value the caller passes (after the
  tensors, positionally or by keyword); with ``meta=True`` too, a meta symbol;
* neither: a run-time value (sizes, strides, user scalars).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping
from typing import Union, cast

from ninetoothed.arrangement._arithmetic import (
    BINARY_OPERATORS,
    COMPARISON_OPERATORS,
    evaluate_node,
)

__all__ = [
    "as_node",
    "Symbol",
    "SymbolLike",
    "binary",
    "block_size",
    "compare",
    "evaluate",
    "is_power_of_two",
    "next_power_of_two",
    "takes_powers_of_two",
]

SymbolLike = Union["Symbol", int]
"""What meta-operations accept wherever a size is expected."""

_unique_ids = itertools.count()


class Symbol:
    """A symbolic integer expression.

    ``Symbol("BLOCK_SIZE", meta=True)`` makes a named symbol; arithmetic on
    symbols makes compound ones.  ``lower_bound``/``upper_bound`` bound the
    values auto-tuning tries for a meta symbol; ``power_of_two`` says every
    value it can take is a power of two (so tiles of that size need no
    padding).  The options may also be given positionally, in upstream's
    order: ``Symbol(expr, constexpr, meta, lower_bound, upper_bound,
    power_of_two)``.

    ``meta=True`` with ``constexpr=True`` is a meta symbol, as upstream: a
    meta symbol is a compile-time constant of the kernel, chosen by
    auto-tuning rather than given by the caller, so ``constexpr`` adds
    nothing to it (its :attr:`constexpr` reads ``False``).
    """

    __slots__ = ("node", "meta", "constexpr", "lower_bound", "upper_bound", "power_of_two", "_free")

    node: ast.expr
    meta: bool
    constexpr: bool
    lower_bound: int | None
    upper_bound: int | None
    power_of_two: bool | None
    _free: dict[str, Symbol]

    def __init__(
        self,
        expr: str | ast.expr | int | Symbol,
        constexpr: bool | None = False,
        meta: bool | None = False,
        lower_bound: int | None = None,
        upper_bound: int | None = None,
        power_of_two: bool | None = None,
    ) -> None:
        meta = bool(meta)
        # Upstream: a meta symbol is already a constexpr (auto-tuned, not given).
        constexpr = bool(constexpr) and not meta
        if isinstance(expr, Symbol):
            node: ast.expr = expr.node
            free = dict(expr._free)
        elif isinstance(expr, str):
            if not expr.isidentifier():
                raise ValueError(f"symbol name must be a Python identifier, got {expr!r}")
            node = ast.Name(id=expr, ctx=ast.Load())
            free = {}
        elif isinstance(expr, ast.expr):
            node = expr
            free = {}
        elif isinstance(expr, int) and not isinstance(expr, bool):
            node = ast.Constant(value=expr)
            free = {}
        else:
            raise TypeError(f"cannot make a Symbol from {type(expr).__name__} {expr!r}")
        if lower_bound is not None and upper_bound is not None and lower_bound > upper_bound:
            raise ValueError(
                f"symbol {expr!r}: lower_bound {lower_bound} exceeds upper_bound {upper_bound}"
            )
        self.node = node
        self.meta = meta
        self.constexpr = constexpr
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.power_of_two = power_of_two
        if isinstance(node, ast.Name):
            free[node.id] = self
        self._free = free

    # ------------------------------------------------------------------ queries
    @property
    def name(self) -> str | None:
        """The name of a plain named symbol, ``None`` for a compound one."""
        return self.node.id if isinstance(self.node, ast.Name) else None

    @property
    def free_symbols(self) -> dict[str, Symbol]:
        """The named symbols this expression mentions, by name."""
        return dict(self._free)

    def names(self) -> set[str]:
        """The names this expression mentions."""
        return set(self._free)

    def is_runtime(self) -> bool:
        """Whether the value is only known at run time (not meta, not constexpr)."""
        return any(not (s.meta or s.constexpr) for s in self._free.values())

    def is_power_of_two(self) -> bool:
        """Whether every value this expression can take is a power of two."""
        return _is_power_of_two(self.node, self._free)

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The value of the expression, given a value for each free name."""
        missing = self.names() - values.keys()
        if missing:
            raise KeyError(f"no value for {', '.join(sorted(missing))} in {self}")
        return evaluate_node(self.node, values)

    def substitute(self, replacements: Mapping[str, SymbolLike]) -> SymbolLike:
        """The expression with named symbols replaced (folding what becomes constant)."""
        return _rebuild(self.node, self._free, replacements)

    def __repr__(self) -> str:
        return ast.unparse(self.node)

    def __str__(self) -> str:
        return ast.unparse(self.node)

    # Structural equality and hashing let symbols live in dicts and sets and be
    # compared in tests.  For a *symbolic* comparison use :meth:`eq`.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Symbol):
            return ast.dump(self.node) == ast.dump(other.node)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(ast.dump(self.node))

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of the symbolic expression {self} is unknown until run time"
        )

    def __index__(self) -> int:
        raise TypeError(f"the symbolic expression {self} has no integer value at compile time")

    # --------------------------------------------------------------- arithmetic
    def __add__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Add(), self, other)

    def __radd__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Add(), other, self)

    def __sub__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Sub(), self, other)

    def __rsub__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Sub(), other, self)

    def __mul__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Mult(), self, other)

    def __rmul__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Mult(), other, self)

    def __floordiv__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.FloorDiv(), self, other)

    def __rfloordiv__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.FloorDiv(), other, self)

    def __mod__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Mod(), self, other)

    def __rmod__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Mod(), other, self)

    def __truediv__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Div(), self, other)

    def __rtruediv__(self, other: SymbolLike) -> SymbolLike:
        return binary(ast.Div(), other, self)

    def __neg__(self) -> SymbolLike:
        return _make(ast.UnaryOp(op=ast.USub(), operand=self.node), self._free)

    def __pos__(self) -> Symbol:
        return self

    def __lt__(self, other: SymbolLike) -> SymbolLike:
        return compare(ast.Lt(), self, other)

    def __le__(self, other: SymbolLike) -> SymbolLike:
        return compare(ast.LtE(), self, other)

    def __gt__(self, other: SymbolLike) -> SymbolLike:
        return compare(ast.Gt(), self, other)

    def __ge__(self, other: SymbolLike) -> SymbolLike:
        return compare(ast.GtE(), self, other)

    def eq(self, other: SymbolLike) -> SymbolLike:
        """The symbolic comparison ``self == other``."""
        return compare(ast.Eq(), self, other)

    def ne(self, other: SymbolLike) -> SymbolLike:
        """The symbolic comparison ``self != other``."""
        return compare(ast.NotEq(), self, other)


BLOCK_SIZE_PREFIX = "BLOCK_SIZE_"
"""How :func:`block_size` names its symbols until an arrangement parameter names them."""


def block_size(lower_bound: int | None = None, upper_bound: int | None = None) -> Symbol:
    """A fresh, uniquely named meta symbol for a tile size.

    Its values are powers of two between ``lower_bound`` and ``upper_bound``
    (defaults 16 and 1024), which auto-tuning explores.  Used as the default
    of an arrangement parameter, ``make`` renames it after the parameter
    (``def arrangement(x, BLOCK_SIZE_M=block_size())`` tunes ``BLOCK_SIZE_M``,
    which a call can then pin: ``kernel(x, BLOCK_SIZE_M=64)``); elsewhere it
    keeps its generated name ``BLOCK_SIZE_<n>``.
    """
    lower = 16 if lower_bound is None else lower_bound
    upper = 1024 if upper_bound is None else upper_bound
    return Symbol(
        f"{BLOCK_SIZE_PREFIX}{next(_unique_ids)}",
        meta=True,
        lower_bound=lower,
        upper_bound=upper,
        power_of_two=True,
    )


def is_block_size(value: object) -> bool:
    """Whether ``value`` is a meta symbol :func:`block_size` made (and nothing renamed)."""
    if not isinstance(value, Symbol) or not value.meta or not isinstance(value.node, ast.Name):
        return False
    name = value.node.id
    return name.startswith(BLOCK_SIZE_PREFIX) and name[len(BLOCK_SIZE_PREFIX) :].isdigit()


def is_symbolic(value: object) -> bool:
    """Whether ``value`` is a :class:`Symbol` (rather than a plain integer)."""
    return isinstance(value, Symbol)


def as_node(value: SymbolLike) -> ast.expr:
    """The AST of a symbol or an integer."""
    if isinstance(value, Symbol):
        return value.node
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ast.Constant(value=value)
    raise TypeError(f"expected an int or a Symbol, got {type(value).__name__} {value!r}")


def evaluate(value: SymbolLike, values: Mapping[str, int]) -> int:
    """The value of a symbol or integer, given values for the free names."""
    return value.evaluate(values) if isinstance(value, Symbol) else value


def names_of(value: object) -> dict[str, Symbol]:
    """The named symbols inside ``value`` (a symbol, an int, or nested tuples of them)."""
    if isinstance(value, Symbol):
        return value.free_symbols
    if isinstance(value, (tuple, list)):
        found: dict[str, Symbol] = {}
        for item in value:
            found.update(names_of(item))
        return found
    return {}


def binary(op: ast.operator, left: SymbolLike, right: SymbolLike) -> SymbolLike:
    """``left op right``, folded where possible."""
    if not isinstance(left, Symbol) and not isinstance(right, Symbol):
        return BINARY_OPERATORS[type(op)](left, right)
    _check_operand(left)
    _check_operand(right)
    # Identities that keep printed expressions as short as the seed documents
    # show them (``1 * (B - 1)`` prints as ``(B - 1)``).
    if isinstance(op, ast.Mult):
        if _is_literal(left, 1):
            return right
        if _is_literal(right, 1):
            return left
        if _is_literal(left, 0) or _is_literal(right, 0):
            return 0
    if isinstance(op, ast.Add):
        if _is_literal(left, 0):
            return right
        if _is_literal(right, 0):
            return left
    if isinstance(op, ast.Sub) and _is_literal(right, 0):
        return left
    # ``x // 1 == x`` and ``x % 1 == 0`` hold for integers only, not after ``/``.
    if isinstance(op, ast.FloorDiv) and _is_literal(right, 1) and not _has_true_division(left):
        return left
    if isinstance(op, ast.Mod) and _is_literal(right, 1) and not _has_true_division(left):
        return 0
    free = {**names_of(left), **names_of(right)}
    return _make(ast.BinOp(left=as_node(left), op=op, right=as_node(right)), free)


def compare(op: ast.cmpop, left: SymbolLike, right: SymbolLike) -> SymbolLike:
    """``left op right`` as a symbolic comparison (a bool when both are ints)."""
    if not isinstance(left, Symbol) and not isinstance(right, Symbol):
        return COMPARISON_OPERATORS[type(op)](left, right)
    _check_operand(left)
    _check_operand(right)
    node = ast.Compare(left=as_node(left), ops=[op], comparators=[as_node(right)])
    return _make(node, {**names_of(left), **names_of(right)})


def ceil_div(numerator: SymbolLike, denominator: SymbolLike) -> SymbolLike:
    """``ceil(numerator / denominator)`` for non-negative operands."""
    return (numerator + denominator - 1) // denominator


def product(values: tuple[SymbolLike, ...] | list[SymbolLike]) -> SymbolLike:
    """The product of sizes (1 for none)."""
    result: SymbolLike = 1
    for value in values:
        result = result * value
    return result


def _check_operand(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (Symbol, int, float)):
        raise TypeError(
            f"symbolic arithmetic needs ints or Symbols, got {type(value).__name__} {value!r}"
        )


def _is_literal(value: SymbolLike, number: int) -> bool:
    if isinstance(value, Symbol):
        return isinstance(value.node, ast.Constant) and value.node.value == number
    return value == number


def _has_true_division(value: SymbolLike) -> bool:
    if isinstance(value, float):
        return True
    return isinstance(value, Symbol) and any(
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
        for node in ast.walk(value.node)
    )


def _make(node: ast.expr, free: dict[str, Symbol]) -> Symbol:
    symbol = Symbol.__new__(Symbol)
    symbol.node = node
    symbol.meta = False
    symbol.constexpr = False
    symbol.lower_bound = None
    symbol.upper_bound = None
    symbol.power_of_two = None
    symbol._free = free
    return symbol


def _rebuild(
    node: ast.expr, free: Mapping[str, Symbol], replacements: Mapping[str, SymbolLike]
) -> SymbolLike:
    """Rebuild ``node`` bottom-up through the folding constructors."""
    if isinstance(node, ast.Constant):
        return cast(int, node.value)  # symbols hold numbers only
    if isinstance(node, ast.Name):
        if node.id in replacements:
            return replacements[node.id]
        return free[node.id] if node.id in free else Symbol(node.id)
    if isinstance(node, ast.BinOp):
        return binary(
            node.op,
            _rebuild(node.left, free, replacements),
            _rebuild(node.right, free, replacements),
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_rebuild(node.operand, free, replacements)
    if isinstance(node, ast.Compare):
        return compare(
            node.ops[0],
            _rebuild(node.left, free, replacements),
            _rebuild(node.comparators[0], free, replacements),
        )
    raise TypeError(f"cannot substitute into {ast.unparse(node)}")


def is_power_of_two(value: object) -> bool:
    """Whether ``value`` is an ``int`` (not a ``bool``) that is a power of two.

    The one test of the whole tree: pinned meta values, literal tile sizes and
    tuning configurations are all checked with it.
    """
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value > 0
        and value & (value - 1) == 0
    )


def _is_power_of_two(node: ast.expr, free: Mapping[str, Symbol]) -> bool:
    if isinstance(node, ast.Constant):
        return is_power_of_two(node.value)
    if isinstance(node, ast.Name):
        symbol = free.get(node.id)
        # Meta symbols are tuned over powers of two only (pinned values are
        # checked to be powers of two), so tiles of their size need no padding;
        # except one declared power_of_two=False, which takes every integer.
        return bool(
            symbol is not None
            and (symbol.power_of_two or (symbol.meta and takes_powers_of_two(symbol)))
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _is_power_of_two(node.left, free) and _is_power_of_two(node.right, free)
    return False


def takes_powers_of_two(symbol: Symbol) -> bool:
    """Whether a meta symbol takes powers of two only (tuned, or pinned at a call).

    As upstream, a meta symbol's ``power_of_two`` defaults to true; with
    ``power_of_two=False`` it takes every integer between its bounds (tiles of
    such a size are padded to the next power of two and masked).
    """
    return symbol.power_of_two is not False


def next_power_of_two(value: int) -> int:
    """The smallest power of two that is at least ``value`` (1 for 0 or 1).

    ``value`` may be any integer-like object: a tracer's symbolic size (PyTorch's
    ``SymInt``, which has no ``bit_length``) is made a plain integer first, which
    makes the tracer specialise on it, as a constexpr would anyway."""
    return 1 if value <= 1 else 1 << (int(value) - 1).bit_length()


def evaluate_with(value: SymbolLike, lookup: Mapping[str, object]) -> object:
    """Evaluate with ``lookup`` supplying each name, without checking names first.

    ``lookup`` may compute values lazily (a mapping with ``__missing__``) and
    may hold numpy arrays, which the concrete evaluator uses to evaluate a whole
    grid of indices at once.
    """
    if isinstance(value, Symbol):
        return evaluate_node(value.node, lookup)  # type: ignore[arg-type]
    return value
