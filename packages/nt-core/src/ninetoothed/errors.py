"""The exceptions NineToothed raises.

Every error derives from :class:`NineToothedError`, so callers can catch the
whole family at once.  Where an error is also a classic Python category (a bad
value, a wrong type), it derives from that built-in too, so code written
against plain Python exceptions keeps working.
"""

from __future__ import annotations

__all__ = [
    "AdapterNotFoundError",
    "ArrangementError",
    "BackendNotFoundError",
    "CodegenError",
    "LaunchError",
    "MetaOperationError",
    "NineToothedError",
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
