"""Python objects an application names, as Triton code.

An application's globals and closure hold ``ninetoothed.language`` (``ntl``)
references, Triton modules and functions, numbers, dtypes and users'
``triton.jit`` helpers.  :func:`reference` turns each into the code that
names it in the generated module (``tl.…``, ``libdevice.…``, a literal, an
injected helper), or ``None`` to keep the application's own spelling.
"""

from __future__ import annotations

import ast
import numbers
import types
from typing import Any

from ninetoothed.arrangement.dtype import DataType, triton_name
from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.language import LIBDEVICE, TRITON_LANGUAGE, LanguageReference
from nt_triton._codegen import inline, naming
from nt_triton._codegen.context import Context
from nt_triton._codegen.syntax import dotted

__all__ = ["fold_builtin_call", "reference", "refusal"]

_KEPT_BUILTINS = (range, min, max, float, int, len, abs, print, tuple)
"""Builtins Triton understands under their own names."""


def reference(context: Context, value: Any) -> ast.expr | None:
    """Code for a Python object the application names, or None to keep the name."""
    if isinstance(value, LanguageReference):
        return _language(context, value.path)
    if isinstance(value, DataType):
        return dotted(f"tl.{triton_name(value.name)}")
    if isinstance(value, Symbol):
        return _symbol(context, value)
    module = getattr(value, "__name__", None)
    if type(value).__name__ == "module" and isinstance(module, str):
        return _module(context, module)
    if _is_triton_constexpr(value):
        value = value.value  # a module-level tl.constexpr(4): its value
    literal = _literal(value)
    if literal is not None:
        return literal
    if isinstance(value, tuple):  # of literals, symbols, dtypes …: (BLOCK_SIZE, 16)
        items = [reference(context, item) for item in value]
        if all(item is not None for item in items):
            return ast.Tuple([item for item in items if item is not None], ast.Load())
    if _is_jit_function(value):
        name = naming.helper(getattr(value, "__name__", "fn"))
        context.injected[name] = value
        return dotted(name)
    if any(value is kept for kept in _KEPT_BUILTINS):
        return None
    # Functions implemented in C may have no module at all (random.random).
    if callable(value) and (getattr(value, "__module__", None) or "").startswith("triton"):
        qualified = f"{value.__module__}.{getattr(value, '__name__', '')}"
        if value.__module__.startswith(TRITON_LANGUAGE + ".extra") and (
            value.__module__.endswith(".libdevice")
        ):
            # A function of an imported libdevice (the interpreter's stands in for it).
            return _language(context, f"{LIBDEVICE}.{value.__name__}")
        if _public_language_name(value):
            # tl.cast is triton.language.core.cast: named as tl.cast, which Triton's
            # interpreter patches (tl.core.cast it does not).
            return dotted(f"tl.{value.__name__}")
        if qualified.startswith(TRITON_LANGUAGE):
            return dotted("tl" + qualified[len(TRITON_LANGUAGE) :])
    return None


def refusal(context: Context, value: Any) -> str | None:
    """Why a Python object the application names cannot be part of a kernel (None
    when it may be: what :func:`reference` writes as code, or a name the generated
    module or Triton knows, such as a function, module or class)."""
    if isinstance(value, Symbol):
        known = ", ".join(sorted(_kernel_symbols(context))) or "none"
        return (
            f"the symbol {value}, which is not among the kernel's symbols ({known}): a "
            "symbol reaches a kernel through its arrangement"
        )
    if isinstance(value, (list, dict, set, frozenset, bytes, bytearray, tuple)):
        kind = type(value).__name__
        return f"a {kind} ({_short(value)}), which Triton kernels cannot hold"
    if isinstance(value, types.BuiltinFunctionType) and value.__module__ != "builtins":
        return (
            f"a Python function implemented in C ({value.__qualname__}), which runs on the "
            "host: a kernel cannot call it"
        )
    if callable(value) or isinstance(value, (types.ModuleType, type)):
        return None
    if _library_object(value):
        return None  # Triton's dtypes and the like: the generated module names them
    return f"a {type(value).__name__} ({_short(value)}), which Triton kernels cannot hold"


def _symbol(context: Context, symbol: Symbol) -> ast.expr | None:
    """A symbol (``BLOCK_SIZE`` of the module) as code: the kernel's parameters of
    that name (None when the kernel does not take them all, see :func:`refusal`)."""
    if symbol.names() - _kernel_symbols(context):
        return None
    return dotted(ast.unparse(symbol.node))


def _kernel_symbols(context: Context) -> set[str]:
    spec = context.spec
    return {*spec.meta_symbols, *spec.constexpr_symbols, *spec.runtime_symbols}


def _literal(value: Any) -> ast.expr | None:
    """A number, bool, string or None as a literal (None otherwise; :func:`reference`
    writes tuples item by item)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return ast.Constant(value)
    if isinstance(value, numbers.Integral):
        return ast.Constant(int(value))  # numpy integers
    if isinstance(value, numbers.Real):
        return ast.Constant(float(value))
    return None


def _public_language_name(value: Any) -> bool:
    """Whether ``value`` is ``triton.language``'s own name for it (``tl.cast``)."""
    import triton.language as tl  # the code generator runs beside Triton

    name = getattr(value, "__name__", None)
    return isinstance(name, str) and getattr(tl, name, None) is value


def _library_object(value: Any) -> bool:
    module = type(value).__module__ or ""
    return any(module == name or module.startswith(name + ".") for name in _LIBRARIES)


_LIBRARIES = ("triton", "ninetoothed", "nt_triton", "nt_torch", "nt_paddle", "nt_jax")


def _is_triton_constexpr(value: Any) -> bool:
    return type(value).__name__ == "constexpr" and type(value).__module__.startswith("triton")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fold_builtin_call(node: ast.Call, local: set[str]) -> ast.expr | None:
    """``float("-inf")`` and the like, with constant arguments, become constants."""
    function = inline.resolve(node.func, local)
    if function not in (float, int, bool) or node.keywords:
        return None
    constants = [arg.value for arg in node.args if isinstance(arg, ast.Constant)]
    if len(constants) != len(node.args):
        return None
    value = function(*constants)
    if isinstance(value, float) and value != value:  # NaN has no literal
        return None
    return ast.Constant(value)


def _language(context: Context, path: str) -> ast.expr | None:
    """``ntl.…`` → ``tl.…``; ``ntl.libdevice.…`` → ``libdevice.…``; ``ntl.exp`` and
    ``ntl.exp2`` → the module's helpers that compute 16-bit floats in float32."""
    if path == LIBDEVICE or path.startswith(LIBDEVICE + "."):
        context.uses_libdevice = True
        return dotted(naming.LIBDEVICE + path[len(LIBDEVICE) :])
    if path.startswith(TRITON_LANGUAGE):
        name = path[len(TRITON_LANGUAGE) + 1 :]
        if name in naming.PROMOTED_MATH:
            context.promoted_math.add(name)
            return dotted(naming.promoted_math(name))
        return dotted("tl" + path[len(TRITON_LANGUAGE) :])
    return None


def _module(context: Context, module: str) -> ast.expr | None:
    """A module the application names (``ntl``, ``triton.language``, libdevice …)."""
    if module in ("triton.language", "ninetoothed.language"):
        return dotted("tl")
    if module == "triton":
        return dotted("triton")
    if module.startswith("triton.language.extra") and module.endswith("libdevice"):
        context.uses_libdevice = True
        return dotted(naming.LIBDEVICE)
    return None


def _is_jit_function(value: Any) -> bool:
    """Whether ``value`` is a ``triton.jit`` function (or the interpreter's stand-in)."""
    return type(value).__name__ in ("JITFunction", "JitFunction") or (
        hasattr(value, "fn") and hasattr(value, "run")
    )
