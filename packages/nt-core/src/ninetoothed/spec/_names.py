"""Names an application reads that nothing defines, found when the kernel is made.

Code generation resolves the names an application reads when the kernel is
made and writes any it cannot resolve into the kernel as they are.  Triton's
compiler then refuses the kernel, but only when it compiles it: at ``make``
when the GPU check runs there, at the first call when a constexpr defers
that check.  Reading the application's source at ``make`` finds such a name
whatever defers the compile: a name is defined when the function binds it
(a parameter, an assignment, an import, a ``for`` target, a nested function's
parameter …), its globals or closure hold it, it is a builtin, or it is one
of the kernel's symbols (an application may name a constexpr symbol, as
upstream's may).  The plain Python helpers the application calls, which are
inlined into the kernel, are read the same way, each decorated function as
the function it wraps, in that function's globals.  Only the body is read: the
signature's annotations and defaults are evaluated where the function is
defined, or never (``from __future__ import annotations``).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types
from collections.abc import Callable, Collection, Iterator
from typing import Any

from ninetoothed.errors import CodegenError
from ninetoothed.spec._usage import HELPER_DEPTH, function_definition, namespace_of

__all__ = ["check_names_defined"]


def check_names_defined(application: Callable[..., Any], symbols: Collection[str]) -> None:
    """Raise :class:`CodegenError` naming the first name ``application`` (or a plain
    helper it calls) reads and nothing defines; ``symbols`` are the kernel's."""
    for function, name, line in _undefined(application, symbols, 0, set()):
        where = f"{inspect.getsourcefile(function) or '<unknown file>'}:{line}"
        reader = function.__name__
        raise CodegenError(
            f"{name} is not defined (read by {reader} at {where}); "
            f"define or import it where {reader} is defined"
        )


def _undefined(
    function: Callable[..., Any], symbols: Collection[str], depth: int, seen: set[int]
) -> Iterator[tuple[Callable[..., Any], str, int]]:
    """``(function, name, line)`` for each undefined name ``function`` and its helpers read."""
    function = inspect.unwrap(function)  # a decorated function's names are the original's
    seen.add(id(function))
    definition = function_definition(function)
    if definition is None:
        return  # no source to read: nothing is known, nothing is refused
    namespace = namespace_of(function)
    bound = _bound(definition)
    first = getattr(getattr(function, "__code__", None), "co_firstlineno", 1)
    for node in _body_nodes(definition):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        name = node.id
        if name in bound or name in namespace or name in symbols or hasattr(builtins, name):
            continue
        yield function, name, first + node.lineno - 1
    if depth + 1 >= HELPER_DEPTH:
        return
    for node in _body_nodes(definition):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            helper = _inlined(namespace.get(node.func.id))
            if helper is not None and id(helper) not in seen:
                yield from _undefined(helper, symbols, depth + 1, seen)


def _inlined(value: Any) -> types.FunctionType | None:
    """The plain Python function code generation inlines for a called ``value``
    (unwrapped from its decorators, as code generation unwraps it), or None."""
    function = inspect.unwrap(value) if hasattr(value, "__wrapped__") else value
    return function if isinstance(function, types.FunctionType) else None


def _bound(definition: ast.FunctionDef) -> set[str]:
    """Every name the function binds anywhere in it (nested scopes included, which
    can only make the check more lenient)."""
    bound: set[str] = set()
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _body_nodes(definition: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of the function's body (its signature's annotations are not in it)."""
    for statement in definition.body:
        yield from ast.walk(statement)
