"""Fingerprints of everything code generation reads, so generated kernels can be reused.

A code-generation backend turns a :class:`~ninetoothed.spec.kernel_spec.KernelSpec` into a
kernel; what it reads is the spec (the arranged tensors, the symbols, the
options, the name) and the application (its source, through the code object
compiled from it, and the values its names resolve to: globals, closure
cells, defaults, the plain helpers it calls, recursively).
:func:`spec_fingerprint` hashes all of that; equal fingerprints mean the
backend would generate the same kernel, so it may reuse one.

The arranged tensors are fingerprinted as they are (the arrangement's result,
not its code), so whatever the arrangement computed from is covered.  Fresh
names that only count how many tensors and index variables a process made
(``ninetoothed_tensor_7``, ``ninetoothed_index_42``, ``requirement_9``) are
renamed in order of appearance, so the same kernel made later in a process, or
in another process, has the same fingerprint.

Correctness first: a value that cannot be fingerprinted safely (an arbitrary
object, a module of the user's whose attribute the application reads and
that is not a plain value, a ``triton.jit`` helper) makes the fingerprint
``None``, and the kernel is generated as if never seen.  Functions, classes
and modules of NineToothed, ``math``, the builtins and the libraries the
caller names (its ``versioned`` modules: nt-triton names itself and Triton)
are named rather than hashed: the caller adds the versions and source files
of those libraries themselves (the ``context`` argument).
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import io
import linecache
import os
import pickle
import re
import types
from collections.abc import Callable, Iterable
from typing import Any

from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.language import LanguageReference
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["CORE_MODULES", "spec_fingerprint"]

CORE_MODULES = ("ninetoothed", "builtins", "math")
"""Modules whose functions and classes are always fingerprinted by name: every
caller's ``context`` covers NineToothed's version and Python's."""

_COUNTED_NAMES = re.compile(rb"ninetoothed_tensor_\d+|ninetoothed_index_\d+|requirement_\d+")
_MODULE_DEPTH = 3
"""How deep ``module.attribute`` chains into users' modules are followed."""


class Unfingerprintable(Exception):
    """A value the fingerprint cannot describe safely (the kernel is then not reused)."""


def spec_fingerprint(
    spec: KernelSpec, context: Iterable[Any] = (), versioned: Iterable[str] = ()
) -> str | None:
    """The hex fingerprint of ``spec`` and its application, or None when not safely possible.

    ``context`` holds what else decides the generated code (the backend's
    version, knobs); its items must be plain values (their ``repr`` is hashed).
    ``versioned`` names the top-level modules (besides :data:`CORE_MODULES`) whose
    code ``context`` versions, so that their functions and classes are named rather
    than hashed: the backend's own (``("nt_triton", "triton")``).
    """
    trusted = CORE_MODULES + tuple(versioned)
    try:
        arranged = data_bytes(
            (spec.name, spec.parameters, spec.grid, spec.meta_symbols, spec.constexpr_symbols,
             spec.runtime_symbols, dict(spec.options)),
            trusted,
        )  # fmt: skip
        application = _Writer(trusted)
        application.function(spec.application)
    except (Unfingerprintable, RecursionError):
        return None
    digest = hashlib.sha256()
    digest.update(repr(tuple(context)).encode())
    digest.update(b"\0")
    digest.update(_COUNTED_NAMES.sub(_Renamer(), arranged))
    digest.update(b"\0")
    digest.update(application.text().encode())
    return digest.hexdigest()[:40]


def data_bytes(value: Any, trusted: tuple[str, ...] = CORE_MODULES) -> bytes:
    """A canonical byte string of a data value: plain Python data, symbols, tensors
    (objects of the ``trusted`` modules, by their attributes).

    Objects shared within ``value`` are written once and referred to after
    (pickle's memo), so the cost is linear in the objects.  Raises
    :class:`Unfingerprintable` for anything else.
    """
    buffer = io.BytesIO()
    # Protocol 0 writes strings as text lines (no length prefixes): renaming the
    # counted names in the bytes afterwards gives the bytes of the renamed value.
    _DataPickler(buffer, trusted).dump(value)
    return buffer.getvalue()


class _Renamer:
    """Renames counted names (a ``re.sub`` callback) in order of appearance."""

    def __init__(self) -> None:
        self.renamed: dict[bytes, bytes] = {}

    def __call__(self, match: re.Match[bytes]) -> bytes:
        found = match.group(0)
        renamed = self.renamed.get(found)
        if renamed is None:
            renamed = self.renamed[found] = b"%s#%d" % (
                found.rstrip(b"0123456789"),
                len(self.renamed),
            )
        return renamed


def _state(*parts: Any) -> None:
    """Stands for a fingerprinted object's type in :func:`data_bytes` (never called)."""


class _DataPickler(pickle.Pickler):
    """Pickles data values by their content, and refuses everything else.

    Exact ints, floats, strings, bytes, tuples, lists, dicts and sets are
    pickled as usual (they never reach :meth:`reducer_override`); other
    objects are written as their type's name and their content (see
    :func:`_kind_of`), which is written after the object is memoised, so
    cycles (a source tensor is its own source) become back-references.
    """

    def __init__(self, file: io.BytesIO, trusted: tuple[str, ...]) -> None:
        super().__init__(file, protocol=0)
        self.trusted = trusted

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        key = (kind, self.trusted)
        how = _KINDS.get(key)
        if how is None:
            how = _KINDS[key] = _kind_of(kind, self.trusted)
        if type(how) is tuple:  # an ast node's fields
            return _state, (kind.__name__,), tuple([getattr(obj, name, None) for name in how])
        if how is _SYMBOL:
            return _state, ("Symbol",), (obj.node, obj.meta, obj.constexpr, obj.lower_bound,
                                         obj.upper_bound, obj.power_of_two, obj._free)  # fmt: skip
        if how is _LIBRARY:
            return _state, (f"{kind.__module__}.{kind.__qualname__}",), _attributes(obj)
        if how is _PRINTED:
            return _state, (kind.__name__,), repr(obj)
        if how is _REFERENCE:
            return _state, ("ntl",), obj.path
        if obj is _state:
            return NotImplemented
        raise Unfingerprintable(f"{kind.__qualname__} {obj!r:.60}")


_SYMBOL, _LIBRARY, _PRINTED, _REFERENCE, _REFUSED = "symbol library printed ntl refused".split()
_KINDS: dict[tuple[type, tuple[str, ...]], Any] = {}
"""How :class:`_DataPickler` writes objects of each type, per set of trusted modules
(see :func:`_kind_of`)."""


def _kind_of(kind: type, trusted: tuple[str, ...]) -> Any:
    """How objects of ``kind`` are written: an ast node's fields (a tuple, ``ctx`` left
    out), a symbol, a NineToothed object (its attributes), a value by its ``repr``, an
    ``ntl`` reference, or refused (functions, classes, modules and other objects)."""
    if issubclass(kind, ast.AST):
        return tuple(name for name in kind._fields if name != "ctx")
    if issubclass(kind, Symbol):
        return _SYMBOL
    if kind in (type(None), type(Ellipsis), bool, complex, slice, range):
        return _PRINTED
    if issubclass(kind, LanguageReference):
        return _REFERENCE
    if (
        _trusted(kind.__module__, trusted)
        and kind.__module__ != "builtins"
        and not issubclass(kind, (type, types.FunctionType, types.ModuleType))
        and not _is_jit_function_type(kind)
    ):
        return _LIBRARY
    return _REFUSED


@functools.cache
def _slots(kind: type) -> tuple[str, ...]:
    """The ``__slots__`` names of ``kind`` and its bases, sorted."""
    return tuple(
        sorted(
            name
            for cls in kind.__mro__
            for name in getattr(cls, "__slots__", ())
            if name not in ("__dict__", "__weakref__")
        )
    )


def _attributes(obj: Any) -> tuple[Any, ...]:
    """A library object's attributes, sorted by name (a str subclass: its text too)."""
    state = getattr(obj, "__dict__", None) or {}
    kind: type = type(obj)
    slots = _slots(kind)
    if not state and not slots and not isinstance(obj, str):
        raise Unfingerprintable(f"{type(obj).__qualname__} object without attributes")
    parts: list[Any] = [str(obj)] if isinstance(obj, str) else []
    parts += sorted(state.items())
    parts += [(name, getattr(obj, name, None)) for name in slots]
    return tuple(parts)


def _trusted(module: object, trusted: tuple[str, ...]) -> bool:
    """Whether ``module`` (a module name) belongs to a library the context versions."""
    return isinstance(module, str) and any(
        module == name or module.startswith(name + ".") for name in trusted
    )


class _Writer:
    """Writes the canonical text of an application: its code and what its names resolve to."""

    def __init__(self, trusted: tuple[str, ...] = CORE_MODULES) -> None:
        self.trusted = trusted
        self.parts: list[str] = []
        self.seen: dict[int, int] = {}
        self.kept: list[Any] = []  # keeps walked objects alive: ids stay unique
        self.stamps: dict[str, str] = {}

    def text(self) -> str:
        return "".join(self.parts)

    def _again(self, obj: Any) -> bool:
        """Write a back-reference if ``obj`` was written before; else remember it."""
        index = self.seen.get(id(obj))
        if index is not None:
            self.parts.append(f"@{index}")
            return True
        self.seen[id(obj)] = len(self.seen)
        self.kept.append(obj)
        return False

    def value(self, obj: Any, names: frozenset[str] = frozenset(), depth: int = 0) -> None:
        """Write a value: plain data, symbols and tensors, functions, modules."""
        kind = type(obj)
        if kind in (tuple, list):
            self.parts.append(f"{kind.__name__}(")
            for item in obj:
                self.value(item, names, depth)
            self.parts.append(")")
        elif kind is dict:
            self.parts.append("dict(")
            for key, item in obj.items():
                self.value(key, names, depth)
                self.value(item, names, depth)
            self.parts.append(")")
        elif isinstance(
            obj, (types.FunctionType, types.ModuleType, type, types.BuiltinFunctionType)
        ):
            self._python(obj, names, depth)
        else:
            data = data_bytes(obj, self.trusted)
            self.parts.append(f"data:{hashlib.sha256(data).hexdigest()};")

    # ----------------------------------------------------------- python
    def _python(self, obj: Any, names: frozenset[str], depth: int) -> None:
        """Functions, classes and modules an application's names resolve to."""
        module = getattr(obj, "__module__", None)
        if isinstance(obj, types.ModuleType):
            if _trusted(obj.__name__, self.trusted):
                self.parts.append(f"module:{obj.__name__};")
            else:
                self._user_module(obj, names, depth)
        elif isinstance(obj, types.FunctionType) and not _trusted(module, self.trusted):
            self.function(obj)
        elif isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) and _trusted(
            module, self.trusted
        ):
            self.parts.append(f"named:{module}.{obj.__qualname__};")
        else:
            raise Unfingerprintable(f"{type(obj).__qualname__} {obj!r:.60}")

    def _user_module(self, module: types.ModuleType, names: frozenset[str], depth: int) -> None:
        """A module of the user's: the attributes the code could read (any of its names)."""
        if depth >= _MODULE_DEPTH:
            raise Unfingerprintable(f"module {module.__name__} nested too deeply")
        if self._again(module):
            return
        self.parts.append(f"module:{module.__name__}(")
        for name in sorted(names):
            if name in vars(module):
                self.parts.append(f"{name}=")
                self.value(vars(module)[name], names, depth + 1)
        self.parts.append(")")

    def function(self, function: Callable[..., Any]) -> None:
        """A plain function: its code, file, defaults, closure and the globals it names."""
        if not isinstance(function, types.FunctionType) or _is_jit_function(function):
            raise Unfingerprintable(f"{type(function).__qualname__} {function!r:.60}")
        if self._again(function):
            return
        code = function.__code__
        names = frozenset(_names(code))
        self.parts.append(f"function:{function.__module__}.{function.__qualname__}(")
        self._code(code)
        self.parts.append(self._stamp(code.co_filename))
        self.value(function.__defaults__, names)
        self.value(function.__kwdefaults__, names)
        for name, cell in zip(code.co_freevars, function.__closure__ or ()):
            self.parts.append(f"{name}=")
            try:
                self.value(cell.cell_contents, names)
            except ValueError:  # an empty cell
                self.parts.append("empty;")
        namespace = function.__globals__
        for name in sorted(names):
            if name in namespace:
                self.parts.append(f"{name}=")
                self.value(namespace[name], names)
            elif hasattr(builtins, name):
                self.parts.append(f"{name}=builtin;")
        self.parts.append(")")

    def _code(self, code: types.CodeType) -> None:
        self.parts.append(
            repr(
                (
                    code.co_name,
                    getattr(code, "co_qualname", code.co_name),
                    code.co_filename,
                    code.co_firstlineno,
                    code.co_argcount,
                    code.co_posonlyargcount,
                    code.co_kwonlyargcount,
                    code.co_flags,
                    code.co_code,
                    code.co_names,
                    code.co_varnames,
                    code.co_freevars,
                    code.co_cellvars,
                )
            )
        )
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                self._code(constant)
            else:
                self.parts.append(repr(_sorted_sets(constant)))

    def _stamp(self, filename: str) -> str:
        """What the source file holds now (code generation reads the source, not the code)."""
        if filename not in self.stamps:
            try:
                status = os.stat(filename)
                stamp = f"file:{status.st_mtime_ns}:{status.st_size};"
            except OSError:
                cached = linecache.cache.get(filename, ())
                if len(cached) != 4:  # none, or a lazy entry
                    raise Unfingerprintable(f"no source for {filename}") from None
                text = "".join(cached[2])
                stamp = f"lines:{hashlib.sha256(text.encode()).hexdigest()};"
            self.stamps[filename] = stamp
        return self.stamps[filename]


def _sorted_sets(constant: Any) -> Any:
    """A code constant with its frozensets sorted (their order varies between processes)."""
    if isinstance(constant, frozenset):
        return ("frozenset", sorted(repr(_sorted_sets(item)) for item in constant))
    if isinstance(constant, tuple):
        return tuple(_sorted_sets(item) for item in constant)
    return constant


def _names(code: types.CodeType) -> Iterable[str]:
    """Every name the code (and the code nested in it) looks up globally or as an attribute."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


_JIT_TYPES = frozenset({"JITFunction", "JitFunction", "InterpretedFunction", "KernelInterface"})


def _is_jit_function(value: Any) -> bool:
    """Whether ``value`` is a ``triton.jit`` function (code generation injects those)."""
    return _is_jit_function_type(type(value))


def _is_jit_function_type(kind: type) -> bool:
    return any(cls.__name__ in _JIT_TYPES for cls in kind.__mro__)
