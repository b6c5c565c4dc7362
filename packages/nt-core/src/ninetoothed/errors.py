"""The exceptions NineToothed raises.

Every error derives from :class:`NineToothedError`, so callers can catch the
whole family at once.  Where an error is also a classic Python category (a bad
value, a wrong type), it derives from that built-in too, so code written
against plain Python exceptions keeps working.

An error about a kernel begins with its label, ``kernel 'add' (add.py:12)``
(:func:`kernel_label`): the kernel's name, and the file base name and line
where its *application* function is defined.  The application, not the
arrangement: it is the function ``make`` and ``@ninetoothed.jit`` name the
kernel after, and the one every kernel has (arrangements are often shared).
Errors while a kernel is made get the label in one place (:func:`labelled`);
call-time messages begin with the spec's
:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.label`.  A call short of
arguments names each parameter it leaves out.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "AdapterNotFoundError",
    "ArrangementError",
    "BackendNotFoundError",
    "CodegenError",
    "DeclaredDtypeWarning",
    "LaunchError",
    "MetaOperationError",
    "NineToothedError",
    "kernel_label",
    "labelled",
    "user_stacklevel",
]


class NineToothedError(Exception):
    """Base class of every error raised by NineToothed and its plugins."""


class BackendNotFoundError(NineToothedError):
    """No installed plugin provides the requested code-generation backend.

    The message names the distribution to install (``nt-triton`` for the
    ``"triton"`` backend).
    """


class AdapterNotFoundError(TypeError, NineToothedError):
    """No installed framework adapter recognises a kernel argument.

    A :class:`TypeError` because the argument's type is what is wrong: the
    message names that type and, when the type belongs to a known framework,
    the distribution that adds support for it (e.g. ``nt-paddle``).
    """


class ArrangementError(ValueError, NineToothedError):
    """An arrangement is invalid.

    For example, the outermost levels of the arranged parameters disagree in
    shape (they must all equal the launch grid), or the arrangement returns the
    wrong number of tensors.
    """


class MetaOperationError(ValueError, NineToothedError):
    """A meta-operation (``tile``, ``expand``, ``squeeze``, ``permute`` …) got
    arguments it cannot apply to the tensor, e.g. a tile of the wrong rank."""


class LaunchError(ValueError, NineToothedError):
    """A kernel was called with bad arguments.

    For example: the wrong number of arguments, a tensor of the wrong rank,
    tensors on different devices, or tensors of two different frameworks in
    one call.
    """


class CodegenError(NineToothedError):
    """The code-generation backend could not turn a kernel into source code,
    e.g. the application uses a construct the backend does not support."""


class DeclaredDtypeWarning(UserWarning):
    """A just-in-time kernel was called with a dtype other than its parameter's declared
    one, or a tensor was declared with a dtype NineToothed does not know.

    Upstream NineToothed's just-in-time kernels ignore declared dtypes (Triton
    specialises a kernel on its arguments' element types, and the generated
    code reads them from the pointers), and upstream programs rely on it: an
    index tensor declared ``int`` given int32, a sum declared float32 given
    integers.  Such calls run on the arguments' dtypes here too, with this
    warning; ahead-of-time kernels, compiled for the declared dtypes, refuse
    them with a :class:`LaunchError`.  Turn it into an error with
    ``warnings.simplefilter("error", DeclaredDtypeWarning)``.
    """


_OWN_PACKAGES = ("ninetoothed", "nt_core", "nt_triton", "nt_torch", "nt_jax", "nt_paddle")


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning issued by the caller of this function
    point at the first frame outside NineToothed's packages (the user's line)."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and (
        frame.f_globals.get("__name__", "").split(".")[0] in _OWN_PACKAGES
    ):
        frame = frame.f_back
        level += 1
    return level


def kernel_label(name: str, application: Callable[..., Any]) -> str:
    """How every error about a kernel names it: ``kernel 'add' (add.py:12)``.

    ``name`` is the kernel's name (``make``'s ``name=``, else the application
    function's); the site is the base name of the file and the line where the
    application function is defined (its first decorator's line, for a
    decorated one), the function a user writes and an error is usually about.
    The site is left out for an application Python knows no source of.
    """
    code = getattr(inspect.unwrap(application), "__code__", None)
    if code is None:
        return f"kernel {name!r}"
    return f"kernel {name!r} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


@contextlib.contextmanager
def labelled(label: str) -> Iterator[None]:
    """Begin the message of any :class:`NineToothedError` raised inside with ``label``.

    Making a kernel raises from many places (the arrangement's meta-operations,
    the spec's checks, code generation); this is where their messages get the
    kernel's label, once.  A message that begins with it already is left alone.
    The error keeps its type and traceback.
    """
    try:
        yield
    except NineToothedError as error:
        if len(error.args) == 1 and isinstance(error.args[0], str):
            if not error.args[0].startswith(label):
                error.args = (f"{label}: {error.args[0]}",)
        raise
