"""Parse an application and inline the plain Python helpers it calls.

The paper's addmm and conv2d reuse matmul's application by calling it; a
kernel has no such calls, so the helper's body is pasted in its place: its
parameters become the caller's argument names (so a tensor parameter passed
along keeps loading and storing its tiles), its other locals get fresh
names, and ``return value`` becomes an assignment the call is replaced by.

Names in pasted code must still resolve where the helper was written (its
module's ``ntl``, its constants), so every name node remembers the globals it
belongs to (:data:`GLOBALS_ATTRIBUTE`), and where it was written, for errors
(:data:`LOCATION_ATTRIBUTE`).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ninetoothed.errors import CodegenError
from nt_triton._codegen import naming

__all__ = [
    "GLOBALS_ATTRIBUTE",
    "Inliner",
    "LOCATION_ATTRIBUTE",
    "UNRESOLVED",
    "inlinable",
    "inline_call",
    "local_names",
    "located",
    "namespace_of",
    "parse_function",
    "resolve",
]

GLOBALS_ATTRIBUTE = "_ninetoothed_globals"
"""Attribute set on name nodes: the namespace the name resolves in."""

LOCATION_ATTRIBUTE = "_ninetoothed_location"
"""Attribute set on name nodes: ``file:line`` where the name is written."""

UNRESOLVED = object()
"""What :func:`resolve` returns for names it cannot resolve statically (locals)."""

_Compound = TypeVar("_Compound", ast.For, ast.While, ast.If)


def parse_function(function: Callable[..., Any]) -> ast.FunctionDef:
    """The function's definition, without decorators or annotations (a decorated
    function's: the one it wraps, with that function's names)."""
    function = inspect.unwrap(function)
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError) as error:
        raise CodegenError(
            f"cannot read the source of {getattr(function, '__name__', function)!r}: {error}; "
            "applications and the helpers they call must be defined in files"
        ) from None
    module = ast.parse(source)
    definitions = [node for node in module.body if isinstance(node, ast.FunctionDef)]
    if not definitions:
        raise CodegenError(
            f"{function.__name__} is not a plain function definition (a lambda?): "
            f"{source.strip()!r}; kernels inline functions defined with def"
        )
    definition = definitions[0]
    definition.decorator_list = []
    definition.returns = None
    for argument in definition.args.args + definition.args.kwonlyargs:
        argument.annotation = None
    namespace = namespace_of(function)
    code = function.__code__
    for node in ast.walk(definition):
        if isinstance(node, ast.Name):
            setattr(node, GLOBALS_ATTRIBUTE, namespace)
            line = code.co_firstlineno + node.lineno - 1  # the source starts at that line
            setattr(node, LOCATION_ATTRIBUTE, f"{code.co_filename}:{line}")
    return definition


def located(node: ast.AST) -> str:
    """`` (at file:line)`` of the first name in ``node`` read from a source, or ``""``."""
    for child in ast.walk(node):
        where = getattr(child, LOCATION_ATTRIBUTE, None)
        if where is not None:
            return f" (at {where})"
    return ""


def namespace_of(function: Callable[..., Any]) -> dict[str, Any]:
    """The names a function's body can see: closure cells over its globals."""
    namespace = dict(getattr(function, "__globals__", {}))
    closure = getattr(function, "__closure__", None) or ()
    code = getattr(function, "__code__", None)
    if code is not None:
        for name, cell in zip(code.co_freevars, closure):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    return namespace


def local_names(definition: ast.FunctionDef) -> set[str]:
    """Parameters and every name the body assigns."""
    names = {argument.arg for argument in definition.args.args + definition.args.kwonlyargs}
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def resolve(node: ast.expr, local: set[str]) -> Any:
    """The Python object a name or attribute chain refers to, or :data:`UNRESOLVED`."""
    if isinstance(node, ast.Name):
        if node.id in local:
            return UNRESOLVED
        namespace = getattr(node, GLOBALS_ATTRIBUTE, {})
        if node.id in namespace:
            return namespace[node.id]
        return getattr(builtins, node.id, UNRESOLVED)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, local)
        if base is UNRESOLVED:
            return UNRESOLVED
        return getattr(base, node.attr, UNRESOLVED)
    return UNRESOLVED


def inlinable(value: Any) -> types.FunctionType | None:
    """The plain Python function a call of ``value`` inlines, or None (Triton-jitted
    functions and builtins are called as they are).

    A decorated helper (``functools.wraps``, ``functools.cache``) inlines the
    function it wraps, its body read where it was written, as upstream inlines
    the helper's own source: the decorator itself does not run in a kernel.
    """
    if hasattr(value, "__triton_builtin__") or _is_triton(value):
        return None  # Triton's own (its builtins are wrapped too)
    function = inspect.unwrap(value) if hasattr(value, "__wrapped__") else value
    if isinstance(function, types.FunctionType) and not hasattr(function, "__triton_builtin__"):
        return function
    return None


def _is_triton(value: Any) -> bool:
    module = getattr(value, "__module__", None) or ""
    return module == "triton" or module.startswith("triton.")


class Inliner(ast.NodeTransformer):
    """Replace calls of plain Python functions with their bodies."""

    def __init__(self, local: set[str], depth: int = 0, ids: Iterator[int] | None = None) -> None:
        self.local = local
        self.depth = depth
        self.ids = ids if ids is not None else itertools.count()
        """Numbers the inlined calls of one kernel (its locals' suffixes): the same
        application gives the same source in every process."""
        self._pending: list[ast.stmt] = []

    def inline_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """Inline every call in ``body`` (statement lists of loops and ifs too)."""
        result: list[ast.stmt] = []
        for statement in body:
            self._pending = []
            statement = self.visit(statement)
            result.extend(self._pending)
            if statement is not None and not _is_dead_expression(statement):
                result.append(statement)
        return result

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body = self.inline_body(node.body)
        return node

    def visit_For(self, node: ast.For) -> ast.For:
        node.iter = self.visit(node.iter)
        return self._nested_bodies(node)

    def visit_While(self, node: ast.While) -> ast.While:
        return self._nested_bodies(node)

    def visit_If(self, node: ast.If) -> ast.If:
        node.test = self.visit(node.test)
        return self._nested_bodies(node)

    def _nested_bodies(self, node: _Compound) -> _Compound:
        """Inline in a compound statement's body and ``else``."""
        node.body = self._nested(node.body)
        node.orelse = self._nested(node.orelse)
        return node

    def _nested(self, body: list[ast.stmt]) -> list[ast.stmt]:
        outer = self._pending
        result = self.inline_body(body)
        self._pending = outer
        return result

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        resolved = resolve(node.func, self.local)
        callee = None if resolved is UNRESOLVED else inlinable(resolved)
        if callee is None:
            return node
        if self.depth > 32:
            raise CodegenError(f"helper {callee.__name__} calls itself too deeply to be inlined")
        statements, result = inline_call(callee, node, self.depth + 1, self.ids)
        self._pending.extend(statements)
        self.local |= {
            n.id
            for s in statements
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        return result if result is not None else ast.Constant(value=None)


def inline_call(
    callee: types.FunctionType, call: ast.Call, depth: int, ids: Iterator[int]
) -> tuple[list[ast.stmt], ast.expr | None]:
    """The statements that replace ``call`` and the expression of its value
    (``ids`` numbers the kernel's inlined calls)."""
    definition = parse_function(callee)
    suffix = naming.inline_suffix(next(ids))
    signature = inspect.signature(callee)
    try:
        bound = signature.bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
    except TypeError as error:
        raise CodegenError(f"cannot inline the call of {callee.__name__}: {error}") from None
    statements: list[ast.stmt] = []
    renames: dict[str, str] = {}
    for name, parameter in signature.parameters.items():
        if name in bound.arguments:
            argument = bound.arguments[name]
        elif parameter.default is not inspect.Parameter.empty:
            argument = ast.Constant(value=parameter.default)
        else:
            raise CodegenError(f"cannot inline {callee.__name__}: no value for {name!r}")
        if isinstance(argument, ast.Name):
            # Tensor parameters passed along must stay the caller's names so
            # that loads and stores keep reaching the caller's tensors.
            renames[name] = argument.id
        else:
            renames[name] = naming.inlined_local(name, suffix)
            target = ast.Name(id=renames[name], ctx=ast.Store())
            statements.append(ast.Assign(targets=[target], value=argument, lineno=0))
    for name in local_names(definition) - set(signature.parameters):
        renames[name] = naming.inlined_local(name, suffix)
    body, result = _return_as_assignment(callee, definition, suffix)
    renamed = [_Renamer(renames).visit(statement) for statement in body]
    inner = Inliner(local_names(definition) | set(renames.values()), depth, ids)
    statements.extend(inner.inline_body(renamed))
    return statements, result


def _return_as_assignment(
    callee: types.FunctionType, definition: ast.FunctionDef, suffix: str
) -> tuple[list[ast.stmt], ast.expr | None]:
    """The helper's body with its final ``return value`` made an assignment, and
    the name the value is assigned to (``None`` when it returns nothing)."""
    body = definition.body
    returns = [node for node in ast.walk(definition) if isinstance(node, ast.Return)]
    if not returns:
        return body, None
    if len(returns) > 1 or body[-1] is not returns[0]:
        raise CodegenError(
            f"cannot inline {callee.__name__}: a helper may only return once, at its end"
        )
    value = returns[0].value
    if value is None:
        return body[:-1], None
    result_name = naming.inline_result(callee.__name__, suffix)
    target = ast.Name(id=result_name, ctx=ast.Store())
    assignment = ast.Assign(targets=[target], value=value, lineno=0)
    return [*body[:-1], assignment], ast.Name(id=result_name, ctx=ast.Load())


class _Renamer(ast.NodeTransformer):
    """Rename local names of an inlined helper; its free names keep their globals."""

    def __init__(self, renames: Mapping[str, str]) -> None:
        self.renames = renames

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.renames:
            renamed = ast.Name(id=self.renames[node.id], ctx=node.ctx)
            return ast.copy_location(renamed, node)
        return node


def _is_dead_expression(statement: ast.stmt) -> bool:
    """A bare ``None`` left where an inlined call without result stood."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and statement.value.value is None
    )
