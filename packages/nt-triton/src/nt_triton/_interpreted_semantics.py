"""Under Triton's interpreter, Python's ``min``, ``max``, ``and``, ``or`` and ``not``
mean in our generated kernels what Triton's compiler makes of them.

Triton's compiler turns a kernel's builtin ``min(a, b)``/``max(a, b)`` into
``tl.minimum``/``tl.maximum`` when an argument is a tensor, ``a or b`` into
``logical_or`` (short-circuiting only over compile-time values) and ``not x``
into a logical not.  Its interpreter runs the kernel as Python, where the
same code compares tensors by their truth value (a block's is always true):
``max(0.0, x)``, a ReLU as upstream programs write it, returned ``x``
unchanged; ``x == inf or x == -inf`` returned the first comparison; ``not
mask`` was ``False``.  No error, on the CPU only.

The interpreter rewrites a kernel's source before running it
(``FunctionRewriter``, which reads the source again).  :func:`install` gives
each kernel function of a module we generated a rewriter that first turns
these constructs into calls of the helpers below, which do what the
compiler does, then applies Triton's own rewrite.  The source file is not
changed, so the GPU front-end check (:mod:`nt_triton._gpu_check`) still
compiles the code as written; users' own ``@triton.jit`` functions in their
modules keep Triton's behaviour.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from types import ModuleType
from typing import Any

import triton.language as tl

__all__ = ["HELPERS", "install", "rewrite"]

_PREFIX = "ninetoothed_interpreted_"
MIN, MAX, BOOLEAN, NOT = (f"{_PREFIX}{name}" for name in ("min", "max", "boolean", "not"))


def _dynamic(value: Any) -> bool:
    """Whether ``value`` is a run-time value (a tensor), as the compiler tells them apart."""
    return isinstance(value, tl.core.base_value) and not isinstance(
        value, (tl.constexpr, tl.core.tuple)
    )


def _unwrapped(value: Any) -> Any:
    return value.value if isinstance(value, tl.constexpr) else value


def _extremum(python: Callable[..., Any], combine: Callable[..., Any]) -> Callable[..., Any]:
    """``min`` or ``max`` as Triton's compiler has them (``builtin_min``/``builtin_max``)."""

    def extremum(*args: Any, **kwargs: Any) -> Any:
        values = [_unwrapped(a) for a in args]
        if len(values) < 2 or not any(_dynamic(v) for v in values):
            return python(*values, **kwargs)  # compile-time values: Python's own
        result = values[0]
        for value in values[1:]:
            result = combine(result, value, **kwargs)
        return result

    return extremum


def _boolean(operator: str, *operands: Callable[[], Any]) -> Any:
    """``a and b``/``a or b`` as Triton's compiler evaluates it: left to right, stopping
    at a compile-time value that decides the result, the run-time values combined by
    ``logical_and``/``logical_or``; with no run-time value, the last value."""
    method = "logical_and" if operator == "and" else "logical_or"
    dynamic: list[Any] = []
    value: Any = None
    for operand in operands:
        value = operand()
        if not _dynamic(value):
            truth = bool(_unwrapped(value))
            if truth is (operator == "or"):
                return value
            continue
        dynamic.append(value)
    if not dynamic:
        return value
    while len(dynamic) >= 2:
        right, left = dynamic.pop(), dynamic.pop()
        dynamic.append(getattr(left, method)(right))
    return dynamic[0]


def _not(operand: Any) -> Any:
    """``not x``: a tensor's logical not, else Python's."""
    if _dynamic(operand):
        return operand.__not__()
    return not _unwrapped(operand)


HELPERS: dict[str, Any] = {
    MIN: _extremum(builtins.min, lambda a, b, **kw: tl.minimum(a, b, **kw)),
    MAX: _extremum(builtins.max, lambda a, b, **kw: tl.maximum(a, b, **kw)),
    BOOLEAN: _boolean,
    NOT: _not,
}
"""The helpers rewritten code calls, by the names it calls them by."""


class _CompiledMeaning(ast.NodeTransformer):
    """Rewrites a kernel function's ``min``/``max`` calls and boolean operators into
    calls of :data:`HELPERS`."""

    def __init__(self, shadowed: frozenset[str]) -> None:
        self.shadowed = shadowed

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            if node.func.id not in self.shadowed:
                name = MIN if node.func.id == "min" else MAX
                node.func = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node.func)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values for n in ast.walk(v)):
            return node  # ``(y := ...)`` in a lambda would bind there, not in the kernel
        operator = "and" if isinstance(node.op, ast.And) else "or"
        lazy = [_thunk(value) for value in node.values]
        call = ast.Call(
            func=ast.Name(id=BOOLEAN, ctx=ast.Load()),
            args=[ast.Constant(value=operator), *lazy],
            keywords=[],
        )
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        call = ast.Call(func=ast.Name(id=NOT, ctx=ast.Load()), args=[node.operand], keywords=[])
        return ast.copy_location(call, node)


def _thunk(value: ast.expr) -> ast.Lambda:
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    return ast.copy_location(ast.Lambda(args=arguments, body=value), value)


def _bound_names(tree: ast.AST) -> frozenset[str]:
    """Names a function binds itself (parameters, assignments, imports, ...)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def rewrite(tree: ast.AST, module_names: frozenset[str] = frozenset()) -> ast.AST:
    """``tree`` (a parsed kernel function) with the constructs above rewritten;
    ``module_names`` are the globals of its module (a module-level ``min`` stays)."""
    rewritten: ast.AST = _CompiledMeaning(module_names | _bound_names(tree)).visit(tree)
    return rewritten


def install(module: ModuleType, filename: str) -> None:
    """Make the interpreter run ``module``'s kernel functions (those defined in
    ``filename``) with the compiled meaning of the constructs above.

    Does nothing where the installed Triton's interpreter has no per-function
    rewriter (``InterpretedFunction.rewriter``) to extend.
    """
    try:
        from triton.runtime.interpreter import FunctionRewriter, InterpretedFunction
    except ImportError:  # pragma: no cover - Triton without an interpreter rewriter
        return
    namespace = module.__dict__
    module_names = frozenset(n for n in namespace if n in ("min", "max"))
    namespace.update(HELPERS)
    for value in list(namespace.values()):
        if not isinstance(value, InterpretedFunction) or not hasattr(value, "rewriter"):
            continue
        code = getattr(value.fn, "__code__", None)
        if code is None or code.co_filename != filename:
            continue
        value.rewriter = _rewriter_class(FunctionRewriter)(value.fn, **value.kwargs)
        value.rewriter.module_names = module_names


_REWRITERS: dict[Any, Any] = {}


def _rewriter_class(base: Any) -> Any:
    """A subclass of Triton's ``FunctionRewriter`` whose AST transform runs ours first."""
    if base not in _REWRITERS:
        tritons = base.ast_transformer

        class Combined(ast.NodeTransformer):
            def __init__(self, module_names: frozenset[str]) -> None:
                self.module_names = module_names

            def visit(self, node: ast.AST) -> Any:
                return tritons.visit(rewrite(node, self.module_names))

        class Rewriter(base):  # type: ignore[misc]
            module_names: frozenset[str] = frozenset()

            @property
            def ast_transformer(self) -> ast.NodeTransformer:
                return Combined(self.module_names)

        _REWRITERS[base] = Rewriter
    return _REWRITERS[base]
