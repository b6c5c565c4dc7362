"""Building the library's kernels: once per variant, on first use, shared by every framework.

A kernel module (``ninetoothed.library.<op>``) describes each variant with
``premake(**variant)``; :func:`kernel` makes it with ``ninetoothed.make`` the
first time that variant is asked for and keeps it.  Kernels are
framework-agnostic: the one made for a PyTorch call also serves Paddle and JAX.

:func:`pinned_block_sizes` makes the kernels built while it is active use one
fixed block size instead of tuning: every arrangement parameter whose default
is a meta symbol (``BLOCK_SIZE_M=block_size()``) gets the value.  Tests use it
to run several programs per grid dimension under the interpreter, where
tuning would pick the largest blocks; symbol names play no part.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.runtime.make import Kernel, make

__all__ = ["kernel", "made", "origin", "pinned", "pinned_block_sizes", "variant_name"]

_PINNED: list[int | None] = [None]
"""The pinned block size (a plain list, which ``torch.compile`` traces; a
``ContextVar`` it cannot)."""
_KERNELS: dict[tuple[Any, ...], Kernel] = {}
_NAMES: dict[tuple[Any, ...], str] = {}
_ORIGINS: dict[str, tuple[str, dict[str, Any]]] = {}
"""Generated source path -> (kernel module's short name, variant): see :func:`origin`."""


class _Made:
    """The kernels made so far, one attribute each (named by :func:`variant_name`)."""


_MADE = _Made()


@contextlib.contextmanager
def pinned_block_sizes(size: int) -> Iterator[None]:
    """Within the block, library kernels are built with every block size ``size``."""
    previous, _PINNED[0] = _PINNED[0], size
    try:
        yield
    finally:
        _PINNED[0] = previous


def pinned() -> int | None:
    """The block size pinned by :func:`pinned_block_sizes`, or None (tuned)."""
    return _PINNED[0]


def kernel(module: ModuleType, **variant: Any) -> Kernel:
    """The kernel of ``module`` for ``variant`` (``premake``'s arguments), made once."""
    # Sorted by name only: Dynamo cannot sort pairs whose values it traces symbolically.
    pairs = tuple((name, variant[name]) for name in sorted(variant))
    return getattr(_MADE, variant_name(module, pairs))  # type: ignore[no-any-return]


def variant_name(module: ModuleType, variant: tuple[tuple[str, Any], ...]) -> str:
    """Make the kernel of ``module`` for ``variant`` if it is new; return the name it is
    kept under (an attribute of :data:`_MADE`).

    For compilers that trace the ops (``torch.compile``), this is a pure function of
    its arguments and the pinned block size: ``nt_torch.ops`` marks it with
    ``torch.compiler.assume_constant_result``, so Dynamo calls it while tracing
    (making a new kernel there, untraced) and takes the name as a constant.  The
    kernel is then read by attribute, which Dynamo reads afresh each time; a dict
    read in a trace is a snapshot that would lack a kernel made later in the same
    trace.  (A block size pinned after a function was compiled does not recompile it.)
    """
    key = (module.__name__, variant, _PINNED[0])
    name = _NAMES.get(key)
    if name is None:
        found = _make(module, dict(variant), key[2])
        name = f"kernel_{len(_NAMES)}"
        setattr(_MADE, name, found)
        _KERNELS[key] = found
        _NAMES[key] = name
        _ORIGINS[found.source_path] = (module.__name__.rsplit(".", 1)[-1], dict(variant))
    return name


def _make(module: ModuleType, variant: dict[str, Any], pinned: int | None) -> Kernel:
    # ``input_precision`` is the ops' (float32 products, ``_precision``), not premake's.
    precision = variant.pop("input_precision", None)
    premade = module.premake(**variant)
    arrangement = premade.arrangement
    if pinned is not None:
        arrangement = functools.partial(arrangement, **dict.fromkeys(_blocks(arrangement), pinned))
    name = premade.name or module.__name__.rsplit(".", 1)[-1]
    options = _options(premade.options)
    if pinned is not None:  # the pinned sizes replace any configurations given
        options.pop("configs", None)
    if precision is not None:
        options["input_precision"] = precision
    return make(arrangement, premade.application, premade.tensors, name=name, **options)


def origin(source_path: str) -> tuple[str, dict[str, Any]] | None:
    """The library kernel module (its short name, ``"rms_norm"``) and the variant
    (``premake``'s arguments) the kernel generated at ``source_path`` was made for;
    None for a kernel the library did not make.  A compiler that computes some
    kernels' work its own way (``nt_torch.fusion``) finds out what a launch does."""
    return _ORIGINS.get(source_path)


def made(op: str | None = None) -> list[Kernel]:
    """The kernels made so far (of the op module named ``op``), oldest first."""
    return [k for key, k in _KERNELS.items() if op is None or key[0].rsplit(".", 1)[-1] == op]


def _blocks(arrangement: Any) -> list[str]:
    """The arrangement's parameters that default to a meta symbol (its block sizes)."""
    return [
        name
        for name, parameter in inspect.signature(arrangement).parameters.items()
        if isinstance(parameter.default, Symbol) and parameter.default.meta
    ]


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """``make``'s options; a limit on the configurations tried is for a GPU's tuning
    only (Triton's interpreter tries two: the code generator's own default), and
    ``NINETOOTHED_MAX_NUM_CONFIGS``, when set, lowers it, or shortens a given list of
    ``configs`` (the GPU tests set 1)."""
    if os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes"):
        return {k: v for k, v in options.items() if k != "max_num_configs"}
    configured = os.environ.get("NINETOOTHED_MAX_NUM_CONFIGS", "")
    options = dict(options)
    if configured.isdigit() and "max_num_configs" in options:
        options["max_num_configs"] = min(options["max_num_configs"], int(configured))
    if configured.isdigit() and "configs" in options:  # a given list: its first ones
        options["configs"] = options["configs"][: max(1, int(configured))]
    return options
