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
  handing the bare name to a plain Python helper (which code generation
  inlines) counts as the helper's occurrences of its parameter, each inside
  the conditions around the call and its own, the helper's parameters read
  as the arguments the call gives them (followed up to
  :data:`~ninetoothed.spec._usage.HELPER_DEPTH` helpers deep);
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
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ninetoothed.arrangement.symbol import Symbol, SymbolLike, names_of
from ninetoothed.spec._usage import HELPER_DEPTH, function_definition, helper_call, namespace_of
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
    definition = function_definition(application)
    if definition is None:
        return ()
    names = {p.name for p in tensors}
    found: dict[str, list[tuple[_Guard, ...]]] = {name: [] for name in names}
    scope = _Scope(application, definition, names, _unchanged)
    for name, path in _occurrences(definition, (), scope):
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


_Guard = tuple[ast.expr, bool]
"""A condition around an occurrence, in the application's names, and the branch it
sits in (``True``: the body)."""


def _unchanged(test: ast.expr) -> ast.expr:
    return test


@dataclass(frozen=True)
class _Scope:
    """A function whose body is searched: the application, or a helper it hands
    parameters to, with what the search needs to know about it."""

    function: Callable[..., Any]
    definition: ast.FunctionDef
    names: set[str]
    """The names searched for: tensor parameters, or the helper parameters they became."""
    rename: Callable[[ast.expr], ast.expr]
    """A condition in this function's names, written in the application's."""
    depth: int = 0
    namespace: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "namespace", namespace_of(self.function))


def _occurrences(
    node: ast.AST, path: tuple[_Guard, ...], scope: _Scope, skip: frozenset[int] = frozenset()
) -> Iterator[tuple[str, tuple[_Guard, ...]]]:
    """Each occurrence of one of ``scope.names`` under ``node``, with its enclosing
    conditions; the names of ``skip`` (ids of argument nodes) were followed into a
    helper instead."""
    if id(node) in skip:
        return
    if isinstance(node, ast.Name) and node.id in scope.names:
        yield node.id, path
    if node is not scope.definition and isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    ):
        path = ()  # a nested function runs when it is called: unguarded
    if isinstance(node, (ast.If, ast.IfExp)):
        yield from _occurrences(node.test, path, scope, skip)
        test = scope.rename(node.test)
        body: list[ast.AST] = [*node.body] if isinstance(node.body, list) else [node.body]
        orelse: list[ast.AST] = [*node.orelse] if isinstance(node.orelse, list) else [node.orelse]
        for child in body:
            yield from _occurrences(child, (*path, (test, True)), scope, skip)
        for child in orelse:
            yield from _occurrences(child, (*path, (test, False)), scope, skip)
        return
    if isinstance(node, ast.Call):
        followed, occurrences = _through_helper(node, path, scope)
        yield from occurrences
        skip = skip | followed
    for child in ast.iter_child_nodes(node):
        yield from _occurrences(child, path, scope, skip)


def _through_helper(
    call: ast.Call, path: tuple[_Guard, ...], scope: _Scope
) -> tuple[frozenset[int], list[tuple[str, tuple[_Guard, ...]]]]:
    """The occurrences inside a plain helper of the names ``call`` hands it, under
    ``path``, and the ids of the argument nodes so followed (none when ``call`` is
    not a helper's, or the helper's source cannot be read)."""
    found = helper_call(scope.namespace, call) if scope.depth < HELPER_DEPTH else None
    if found is None:
        return frozenset(), []
    helper, arguments = found
    handed = {
        parameter: argument.id
        for parameter, argument in arguments.items()
        if isinstance(argument, ast.Name) and argument.id in scope.names
    }
    definition = function_definition(helper) if handed else None
    if definition is None:
        return frozenset(), []
    rename = _renaming(definition, arguments, scope.rename)
    inner = _Scope(helper, definition, set(handed), rename, scope.depth + 1)
    occurrences = [
        (handed[name], (*path, *inner_path))
        for name, inner_path in _occurrences(definition, (), inner)
    ]
    return frozenset(id(arguments[parameter]) for parameter in handed), occurrences


def _renaming(
    definition: ast.FunctionDef,
    arguments: Mapping[str, ast.expr],
    outer: Callable[[ast.expr], ast.expr],
) -> Callable[[ast.expr], ast.expr]:
    """How a helper's condition reads in the application's names: each parameter the
    helper never rebinds is the argument the call gives it; every other name is the
    helper's own, which no constexpr value gives."""
    rebound = _rebound(definition)
    replacements = {
        name: outer(argument) for name, argument in arguments.items() if name not in rebound
    }

    class Renamed(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            if node.id in replacements:
                return copy.deepcopy(replacements[node.id])
            return ast.Name(id=f"{node.id} of {definition.name}", ctx=ast.Load())

    def rename(test: ast.expr) -> ast.expr:
        renamed: ast.expr = Renamed().visit(copy.deepcopy(test))
        return renamed

    return rename


def _constexpr_names(
    application: Callable[..., Any],
    parameters: Sequence[Parameter],
    constexpr_symbols: Mapping[str, Symbol],
    definition: ast.FunctionDef,
) -> frozenset[str]:
    """The names whose value a call's constexprs give, and which the application never
    rebinds: constexpr scalar parameters, and constexpr symbols it names directly."""
    rebound = _rebound(definition)
    names = {p.name for p in parameters}
    scalars = {p.name for p in parameters if p.is_scalar and p.source.constexpr}
    namespace = namespace_of(application)
    symbols = {
        name
        for name in constexpr_symbols
        if name not in names and isinstance(namespace.get(name, constexpr_symbols[name]), Symbol)
    }
    return frozenset((scalars | symbols) - rebound)


def _rebound(definition: ast.FunctionDef) -> set[str]:
    """The names a function assigns, binds in a nested scope's parameters, or
    declares ``global``/``nonlocal``: their values are not what they were given."""
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
    return rebound


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
