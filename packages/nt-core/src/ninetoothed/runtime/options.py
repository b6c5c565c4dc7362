"""The options ``make`` and ``jit`` take, checked before anything is generated.

``make(..., **options)`` used to hand whatever it got to the backend, so a
misspelt option (``num_warp=8``) was silently ignored and a bad value failed
deep inside Triton.  :func:`check_options` is the one place that knows the
options: it refuses unknown ones naming the close matches, checks every
value, resolves upstream's ``kernel_name`` (the kernel's name, as ``name``
is here) and refuses the ahead-of-time options where they do not apply
(``make`` takes them out first: :mod:`ninetoothed._aot.request`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ninetoothed.arrangement.symbol import is_power_of_two

__all__ = [
    "AHEAD_OF_TIME",
    "BACKEND_OPTIONS",
    "INPUT_PRECISIONS",
    "UPSTREAM_OPTIONS",
    "check_options",
]

BACKEND_OPTIONS = (
    "num_warps",
    "num_stages",
    "maxnreg",
    "max_num_configs",
    "configs",
    "persistent",
    "input_precision",
)
"""Options handed to the code-generation backend (see :func:`check_options`)."""

INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee")
"""``input_precision``'s values, as ``tl.dot`` names them: float32 operands rounded to
TF32 for the tensor cores, three TF32 passes (about float32's precision), or float32
products (no tensor cores)."""

UPSTREAM_OPTIONS = ("kernel_name", "caller", "output_dir", "target", "_prettify")
"""Upstream NineToothed's options beyond the backend's: ``kernel_name`` names the
kernel; ``caller`` other than ``"torch"``, ``output_dir`` and (ours) ``target`` ask
for ahead-of-time compilation; ``_prettify`` (a bool) formats upstream's generated
file, which changes nothing a kernel computes: it is checked and ignored."""

JIT_CALLER = "torch"
"""The one ``caller`` upstream compiles just in time (kernels called from Python)."""

AHEAD_OF_TIME = (
    "jit compiles just in time; to compile ahead of time into a C library use "
    "ninetoothed.make(..., caller='cuda', output_dir=...) or ninetoothed.build"
)
"""The message of the :class:`NotImplementedError` ahead-of-time options raise in ``jit``."""


def check_options(
    function: str, name: str | None, options: Mapping[str, Any], keywords: tuple[str, ...]
) -> tuple[str | None, dict[str, Any]]:
    """The kernel's name and the backend's options, checked.

    ``function`` (``"make"`` or ``"jit"``) and ``keywords`` (its own keyword
    parameters) word the errors.  Raises :class:`TypeError` for an unknown
    option (naming the close matches) or a value of the wrong type,
    :class:`ValueError` for a value out of range, and
    :class:`NotImplementedError` for ahead-of-time compilation.
    """
    known = (*keywords, *BACKEND_OPTIONS, *UPSTREAM_OPTIONS)
    for option in options:
        if option not in known:
            raise TypeError(_unknown(function, option, known))
    caller = options.get("caller", JIT_CALLER)
    output_dir = options.get("output_dir")
    if caller != JIT_CALLER or output_dir is not None or options.get("target") is not None:
        raise NotImplementedError(
            f"{function}(caller={caller!r}, output_dir={output_dir!r}): {AHEAD_OF_TIME}"
        )
    prettify = options.get("_prettify", False)
    if not isinstance(prettify, bool):
        raise TypeError(f"{function}: _prettify must be a bool, got {type(prettify).__name__}")
    kernel_name = options.get("kernel_name")
    if kernel_name is not None:
        if not isinstance(kernel_name, str):
            raise TypeError(
                f"{function}: kernel_name must be a str, got {type(kernel_name).__name__}"
            )
        if name is not None and name != kernel_name:
            raise TypeError(
                f"{function}: name={name!r} and kernel_name={kernel_name!r} both name the "
                "kernel; give one"
            )
        name = kernel_name
    backend = {key: value for key, value in options.items() if key in BACKEND_OPTIONS}
    _check_launch_option(function, "num_warps", backend.get("num_warps"), power_of_two=True)
    _check_launch_option(function, "num_stages", backend.get("num_stages"), power_of_two=False)
    _check_maxnreg(function, backend.get("maxnreg"))
    _check_max_num_configs(function, backend.get("max_num_configs"))
    _check_configs(function, backend.get("configs"))
    precision = backend.get("input_precision")
    if precision is not None and precision not in INPUT_PRECISIONS:
        raise ValueError(
            f"{function}: input_precision must be one of {', '.join(map(repr, INPUT_PRECISIONS))}"
            f" (or None: Triton's default), got {precision!r}"
        )
    persistent = backend.get("persistent", False)
    if not isinstance(persistent, bool):
        raise TypeError(
            f"{function}: persistent must be a bool, got {type(persistent).__name__} {persistent!r}"
        )
    return name, backend


def _unknown(function: str, option: str, known: tuple[str, ...]) -> str:
    """The message for an unknown keyword, naming the close matches."""
    message = f"{function}() got an unexpected keyword argument {option!r}"
    matches = difflib.get_close_matches(option, known, n=3)
    if matches:
        return message + "; did you mean " + " or ".join(repr(m) for m in matches) + "?"
    return message + f"; it takes {', '.join(known)}"


def _launch_option_values(function: str, option: str, value: Any) -> tuple[Any, ...]:
    """A launch option's values: one, or a non-empty tuple or list of them to tune over."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not values:
        raise ValueError(f"{function}: {option} is an empty {type(value).__name__}")
    return values


def _is_int(item: Any) -> bool:
    return isinstance(item, int) and not isinstance(item, bool)


def _check_launch_option(function: str, option: str, value: Any, *, power_of_two: bool) -> None:
    """``num_warps`` (a power of two) or ``num_stages``: an int, or a tuple of them to tune over."""
    if value is None:
        return
    for item in _launch_option_values(function, option, value):
        if not _is_int(item):
            raise TypeError(
                f"{function}: {option} must be an int or a tuple of ints, got "
                f"{type(item).__name__} {item!r}"
            )
        if power_of_two and not is_power_of_two(item):
            raise ValueError(f"{function}: {option} must be a power of two, got {item}")
        if item < 0:
            raise ValueError(f"{function}: {option} must not be negative, got {item}")


def _check_maxnreg(function: str, value: Any) -> None:
    """``maxnreg``: Triton's cap on registers per thread, an int, or a tuple of ints and
    None (no cap) to tune over."""
    if value is None:
        return
    for item in _launch_option_values(function, "maxnreg", value):
        if item is not None and not _is_int(item):
            raise TypeError(
                f"{function}: maxnreg must be an int, None or a tuple of them, got "
                f"{type(item).__name__} {item!r}"
            )
        if item is not None and not 24 <= item <= 255:
            raise ValueError(f"{function}: maxnreg must be between 24 and 255, got {item}")


def _check_max_num_configs(function: str, value: Any) -> None:
    """``max_num_configs``: a positive int (or None, no cap)."""
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"{function}: max_num_configs must be an int, got {type(value).__name__} {value!r}"
        )
    if value < 1:
        raise ValueError(f"{function}: max_num_configs must be at least 1, got {value}")


def _check_configs(function: str, value: Any) -> None:
    """``configs``: a list of dicts of meta values (pinned configurations)."""
    if value is None:
        return
    if not isinstance(value, (tuple, list)) or not all(isinstance(c, Mapping) for c in value):
        raise TypeError(
            f"{function}: configs must be a list of dicts of meta values (with optional "
            f"num_warps, num_stages and maxnreg), got {value!r}"
        )
    for index, entry in enumerate(value):
        cap = entry.get("maxnreg")
        if isinstance(cap, (tuple, list)):
            raise TypeError(
                f"{function}: configs[{index}]['maxnreg'] is one cap (an int or None), got {cap!r}"
            )
        _check_maxnreg(function, cap)
