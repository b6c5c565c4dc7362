"""Triton's errors at a launch, told in the application's terms.

Triton reports what its front end or interpreter saw (``Expected dtype
['fp32', 'fp64'] but got int64``): a dtype, but not which argument had it.
:func:`explained` turns such an error into a
:class:`~ninetoothed.errors.LaunchError` that names the kernel, the
parameters whose dtype the message mentions, every argument's dtype, and,
under the interpreter, the line of the generated source that failed.
"""

from __future__ import annotations

import contextlib
import linecache
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ninetoothed.errors import LaunchError
from nt_triton._abi import KernelSignature, ParameterKind

__all__ = [
    "application_location",
    "argument_dtypes",
    "canonical",
    "compile_errors_named",
    "compile_failure",
    "compiler_excerpt",
    "explained",
    "failing_line",
]

_TRITON_NAMES = {"fp": "float", "bf": "bfloat", "i": "int", "u": "uint"}


def application_location(application: Any) -> str:
    """``name at file:line`` of an application's definition, as far as Python knows it."""
    code = getattr(application, "__code__", None)
    name = getattr(application, "__qualname__", repr(application))
    if code is None:
        return str(name)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def compiler_excerpt(error: BaseException | str, lines: int = 14) -> str:
    """The end of Triton's compiler message: the generated lines before the failing
    one, the caret under it, and the cause."""
    text = str(error).strip() or type(error).__name__
    return "\n".join(text.splitlines()[-lines:])


def compile_failure(name: str, application: Any, error: BaseException | str) -> LaunchError:
    """A :class:`LaunchError` for a kernel that Triton's compiler rejects on the GPU.

    A call through a trampoline (jax-triton's) fails at the trampoline's call
    of the kernel, caused by the kernel's own failure: the innermost
    compilation error is the one that points into the application.
    """
    if isinstance(error, BaseException):
        error = _innermost(error)
    return LaunchError(
        f"{name}: the kernel does not compile for the GPU (the application is "
        f"{application_location(application)}). Triton's compiler, at the generated line "
        f"marked ^:\n{compiler_excerpt(error)}"
    )


@contextlib.contextmanager
def compile_errors_named(name: str, application: Any) -> Iterator[None]:
    """Turn Triton's ``CompilationError`` raised inside into :func:`compile_failure`'s
    error: wherever a launch path compiles (the fast path, jax-triton's call and
    lowering), a rejected application is the user's to fix, not a launch failure."""
    from triton.compiler.errors import CompilationError

    try:
        yield
    except CompilationError as error:
        raise compile_failure(name, application, error) from error


def _innermost(error: BaseException) -> BaseException:
    """The deepest error of ``error``'s own type among its causes and contexts.

    Both links are followed: JAX replaces a lowering error's ``__cause__`` with
    its own stack-trace marker, and the kernel's error then stays reachable as
    the ``__context__`` (``raise ... from e`` inside ``except e`` sets both).
    """
    found, seen, pending = error, set(), [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if type(current) is type(error):
            found = current
        pending += [link for link in (current.__context__, current.__cause__) if link is not None]
    return found


def canonical(name: str) -> str:
    """A Triton type name (``fp32``, ``bf16``, ``i64``, ``int1``) as a dtype name (``float32``)."""
    if name == "int1" or name == "i1":
        return "bool"
    match = re.fullmatch(r"(fp|bf|i|u)(\d+)", name)
    return _TRITON_NAMES[match[1]] + match[2] if match else name


def argument_dtypes(signature: KernelSignature, arguments: Sequence[Any]) -> dict[str, str]:
    """Each tensor and scalar parameter's dtype name in this call (``"float32"`` …)."""
    dtypes: dict[str, str] = {}
    for parameter, argument in zip(signature.host, arguments):
        if parameter.kind is ParameterKind.POINTER and parameter.tensor_index is not None:
            name = signature.tensor_parameters[parameter.tensor_index]
            dtypes[name] = canonical(str(getattr(argument, "dtype", "?")).rsplit(".", 1)[-1])
        elif parameter.kind is ParameterKind.SCALAR and not isinstance(argument, bool):
            if isinstance(argument, int):
                dtypes[parameter.name] = "int32" if -(2**31) <= argument < 2**31 else "int64"
            elif isinstance(argument, float):
                dtypes[parameter.name] = "float32"
    return dtypes


def failing_line(error: BaseException, source_path: str) -> str:
    """``line N: <code>`` of the generated source where ``error`` was raised, if there."""
    found = ""
    for cause in (error, error.__cause__, error.__context__):
        traceback = getattr(cause, "__traceback__", None)
        while traceback is not None:
            frame = traceback.tb_frame
            if frame.f_code.co_filename == source_path:
                line = linecache.getline(source_path, traceback.tb_lineno).strip()
                found = f" (line {traceback.tb_lineno} of {source_path}: {line})"
            traceback = traceback.tb_next
        if found:
            return found
    return ""


def explained(
    name: str,
    signature: KernelSignature,
    arguments: Sequence[Any],
    error: BaseException,
    source_path: str,
) -> LaunchError:
    """A :class:`LaunchError` for Triton's ``error`` in a launch of kernel ``name``."""
    cause = error.__cause__ or error
    message = str(cause).strip().splitlines()[-1] if str(cause).strip() else type(cause).__name__
    dtypes = argument_dtypes(signature, arguments)
    # "... but got int64": the dtype after "got" is the argument's, the others expected.
    words = re.findall(r"got\W+([A-Za-z]+\d+)", str(error)) or re.findall(
        r"[A-Za-z]+\d+", str(error)
    )
    mentioned = {canonical(word) for word in words}
    culprits = [parameter for parameter, dtype in dtypes.items() if dtype in mentioned]
    listing = ", ".join(f"{parameter}: {dtype}" for parameter, dtype in dtypes.items())
    where = failing_line(error, source_path)
    if culprits and len(culprits) < len(dtypes):
        named = " and ".join(f"{p!r} is {dtypes[p]}" for p in culprits)
        return LaunchError(
            f"{name}: parameter {named}, which the application cannot take there "
            f"(Triton: {message}{where}; the arguments: {listing})"
        )
    return LaunchError(
        f"{name}: Triton could not run the application on these arguments ({listing}): "
        f"{message}{where}"
    )
