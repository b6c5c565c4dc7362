"""Tensor parameters an application touches only under constexpr conditions.

Upstream operator libraries pass a placeholder for an absent optional input
and a constexpr flag that switches off the code touching it: ntops's
attention without a mask passes ``torch.empty(..., device="meta")`` and
``with_attn_mask=False``; its nll_loss without a weight passes an int64
dummy and ``has_weight=False``.  Triton compiles only the branch a constexpr
condition selects, so such a kernel never reads the placeholder.

The rule, read from the application's source once per kernel:

* every occurrence of the parameter's name in the application lies inside
  the body (or ``else``) of an ``if`` statement or a conditional expression
  (``a if c else b``); an occurrence anywhere else (a load, a store, a call
  that takes the tensor, an attribute, a nested function) makes it *used*;
* for a call, an occurrence is *off* when one of its enclosing conditions
  is a constexpr condition that selects the other branch; a condition is
  constexpr when it is built from the call's constexpr values (the
  application's ``Tensor(0, constexpr=True)`` parameters, given at the call
  or fixed at ``make``, and constexpr symbols given by keyword), literals,
  ``not``, ``==``/``!=`` and ``and``/``or``; anything else may hold;
* a parameter all of whose occurrences are off is *unused for that call*.

Never unused, whatever the call: a parameter whose sizes or strides the
launch grid or another parameter's arrangement mentions (faking them would
change what the others read), a jagged parameter, and every parameter of an
application whose source cannot be read.  The constexpr names must not be
assigned in the application.  :func:`ninetoothed.runtime.binding.bind_call` skips an
unused parameter's checks and hands the kernel a one-element stand-in.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ninetoothed.arrangement.symbol import Symbol, SymbolLike, names_of
from ninetoothed.spec._usage import application_tree, namespace_of
from ninetoothed.spec.parameter import Parameter

__all__ = ["Conditional", "conditional_parameters"]

Condition = Callable[[Mapping[str, Any]], Any]
"""A constexpr condition compiled to a function of the call's constexpr values."""

Path = tuple[tuple[Condition | None, bool], ...]
"""The conditions enclosing one occurrence, each with the branch it sits in
(``True``: the body); ``None`` for a condition that is not constexpr."""


@dataclass(frozen=True)
class Conditional:
    """A tensor parameter that only constexpr-guarded code touches."""

    index: int
    """Its index among the tensor parameters."""

    name: str

    paths: tuple[Path, ...]
    """One per distinct occurrence."""

    def used(self, values: Mapping[str, Any]) -> bool:
        """Whether some occurrence may run for a call with these constexpr ``values``."""
        return any(not _off(path, values) for path in self.paths)


def _off(path: Path, values: Mapping[str, Any]) -> bool:
    """Whether a constexpr condition of ``path`` selects the other branch."""
    for condition, branch in path:
        if condition is None:
            continue
        try:
            value = bool(condition(values))
        except Exception:  # a value the call lacks or that does not compare: may hold
            continue
        if value != branch:
            return True
    return False


def conditional_parameters(
    application: Callable[..., Any],
    parameters: Sequence[Parameter],
    constexpr_symbols: Mapping[str, Symbol],
    grid: Sequence[SymbolLike],
) -> tuple[Conditional, ...]:
    """The tensor parameters among ``parameters`` (a kernel's, in order, with its
    constexpr symbols and launch grid) that the rule above may leave unused."""
    tensors = [p for p in parameters if not p.is_scalar]
    tree = application_tree(application)
    if tree is None:
        return ()
    definition = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if definition is None:
        return ()
    names = {p.name for p in tensors}
    found: dict[str, list[tuple[tuple[ast.expr, bool], ...]]] = {name: [] for name in names}
    for name, path in _occurrences(definition, (), names, definition):
        found[name].append(path)
    known = _constexpr_names(application, parameters, constexpr_symbols, definition)
    entangled = _entangled(tensors, grid)
    result = []
    for index, parameter in enumerate(tensors):
        paths = found[parameter.name]
        if (
            not paths
            or any(not path for path in paths)
            or parameter.source.jagged_dim is not None
            or parameter.name in entangled
        ):
            continue
        compiled = {
            tuple((ast.dump(test), branch) for test, branch in path): tuple(
                (_compile(test, known), branch) for test, branch in path
            )
            for path in paths
        }
        result.append(Conditional(index, parameter.name, tuple(compiled.values())))
    return tuple(result)


def _occurrences(
    node: ast.AST,
    path: tuple[tuple[ast.expr, bool], ...],
    names: set[str],
    root: ast.AST,
) -> Iterator[tuple[str, tuple[tuple[ast.expr, bool], ...]]]:
    """Each occurrence of one of ``names`` under ``node``, with its enclosing conditions."""
    if isinstance(node, ast.Name) and node.id in names:
        yield node.id, path
    if node is not root and isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    ):
        path = ()  # a nested function runs when it is called: unguarded
    if isinstance(node, (ast.If, ast.IfExp)):
        yield from _occurrences(node.test, path, names, root)
        body: list[ast.AST] = [*node.body] if isinstance(node.body, list) else [node.body]
        orelse: list[ast.AST] = [*node.orelse] if isinstance(node.orelse, list) else [node.orelse]
        for child in body:
            yield from _occurrences(child, (*path, (node.test, True)), names, root)
        for child in orelse:
            yield from _occurrences(child, (*path, (node.test, False)), names, root)
        return
    for child in ast.iter_child_nodes(node):
        yield from _occurrences(child, path, names, root)


def _constexpr_names(
    application: Callable[..., Any],
    parameters: Sequence[Parameter],
    constexpr_symbols: Mapping[str, Symbol],
    definition: ast.FunctionDef,
) -> frozenset[str]:
    """The names whose value a call's constexprs give, and which the application never
    rebinds: constexpr scalar parameters, and constexpr symbols it names directly."""
    rebound = {
        node.id
        for node in ast.walk(definition)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
    }
    arguments = definition.args
    rebound |= {
        node.arg
        for node in ast.walk(definition)
        if isinstance(node, ast.arg) and node not in arguments.args
    }
    rebound |= {
        name
        for node in ast.walk(definition)
        if isinstance(node, (ast.Global, ast.Nonlocal))
        for name in node.names
    }
    names = {p.name for p in parameters}
    scalars = {p.name for p in parameters if p.is_scalar and p.source.constexpr}
    namespace = namespace_of(application)
    symbols = {
        name
        for name in constexpr_symbols
        if name not in names and isinstance(namespace.get(name, constexpr_symbols[name]), Symbol)
    }
    return frozenset((scalars | symbols) - rebound)


def _entangled(tensors: Sequence[Parameter], grid: Sequence[SymbolLike]) -> set[str]:
    """Tensor parameters whose sizes or strides the grid or another parameter reads."""
    own = {
        p.name: {
            name
            for dim in range(p.source.ndim)
            for name in (p.source.size_string(dim), p.source.stride_string(dim))
        }
        for p in tensors
    }
    gridded = set(names_of(tuple(grid)))
    read = {p.name: _names_read(p) for p in tensors}
    return {
        p.name
        for p in tensors
        if own[p.name] & gridded
        or any(own[p.name] & read[q.name] for q in tensors if q.name != p.name)
    }


def _names_read(parameter: Parameter) -> set[str]:
    """Every symbol name in a parameter's arrangement: shapes, bindings, requirements."""
    names: set[str] = set()
    arranged = parameter.arranged
    for level in arranged.levels():
        names |= set(names_of(level.shape))
    for binding in arranged.all_bindings().values():
        names |= set(names_of(binding.expression)) | set(names_of(binding.bound))
    for requirement in arranged.all_requirements().values():
        names |= set(names_of(requirement.size))
    return names


_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}


def _compile(test: ast.expr, known: frozenset[str]) -> Condition | None:
    """``test`` as a function of the constexpr values, or None if it is not constexpr."""
    if isinstance(test, ast.Constant) and isinstance(test.value, (bool, int, float, type(None))):
        value = test.value
        return lambda values: value
    if isinstance(test, ast.Name):
        name = test.id
        return (lambda values: values[name]) if name in known else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = _compile(test.operand, known)
        return None if operand is None else (lambda values: not operand(values))
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARISONS:
        compare = _COMPARISONS[type(test.ops[0])]
        left, right = _compile(test.left, known), _compile(test.comparators[0], known)
        if left is None or right is None:
            return None
        return lambda values: compare(left(values), right(values))
    if isinstance(test, ast.BoolOp):
        operands = [_compile(value, known) for value in test.values]
        if any(operand is None for operand in operands):
            return None
        every: Sequence[Condition] = [o for o in operands if o is not None]
        if isinstance(test.op, ast.And):
            return lambda values: all(operand(values) for operand in every)
        return lambda values: any(operand(values) for operand in every)
    return None
