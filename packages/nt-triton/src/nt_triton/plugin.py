"""The ``triton`` entry point: the Triton backend, ``ninetoothed cache``, ``tune`` and
``build-library``.

Loading this module must stay cheap, because every process that makes a
kernel or runs the ``ninetoothed`` command loads it through the entry point:
the backend, and with it Triton, is imported only when a kernel is first
generated, and the cache's command only when the command line is built.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING

from ninetoothed.runtime.hookspecs import hookimpl

if TYPE_CHECKING:
    import argparse

    from nt_triton._backend import TritonBackend
    from nt_triton._kernel import TritonKernel
    from nt_triton.aot import TritonBuilder

__all__ = [
    "BACKEND_NAME",
    "ninetoothed_ahead_of_time_builder",
    "ninetoothed_cli_commands",
    "ninetoothed_codegen_backend",
    "ninetoothed_loaded_kernel",
]

BACKEND_NAME = "triton"
"""The name ``ninetoothed.runtime.plugins.codegen_backend`` asks for."""

AHEAD_OF_TIME_CALLER = "cuda"
"""The ``caller`` of ``make(..., caller="cuda")`` whose C libraries nt-triton builds."""


@functools.cache
def _backend() -> TritonBackend:
    """The process-wide backend, created on first use."""
    from nt_triton._backend import TritonBackend

    return TritonBackend()


@hookimpl
def ninetoothed_codegen_backend(name: str) -> TritonBackend | None:
    """Return the Triton backend when ``name`` is ``"triton"``, else ``None``."""
    if name != BACKEND_NAME:
        return None
    return _backend()


@hookimpl
def ninetoothed_cli_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add ``ninetoothed cache info|clear`` (:mod:`nt_triton.cache._cli`), ``ninetoothed
    tune export|import`` (:mod:`nt_triton.tuner._cli`) and ``ninetoothed build-library``
    (the kernel library as a C library, built by this plugin's builder:
    :mod:`ninetoothed.library.build`)."""
    from ninetoothed.library.build import add_arguments, run
    from nt_triton.cache import _cli as cache_commands
    from nt_triton.tuner import _cli as tune_commands

    cache_commands.add_commands(subparsers)
    tune_commands.add_commands(subparsers)
    parser = subparsers.add_parser(
        "build-library",
        help="build NineToothed's kernel library as a C library (libninetoothed_ops.so)",
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


@hookimpl
def ninetoothed_loaded_kernel(source_path: str) -> TritonKernel | None:
    """The kernel made in this process from ``source_path`` (None before any kernel is made:
    then nt-triton's kernel module, and Triton, are not even imported)."""
    module = sys.modules.get("nt_triton._kernel")
    if module is None:
        return None
    found: TritonKernel | None = module.LOADED.get(source_path)
    return found


@hookimpl
def ninetoothed_ahead_of_time_builder(caller: str) -> TritonBuilder | None:
    """Return the C-library builder when ``caller`` is ``"cuda"``, else ``None``."""
    if caller != AHEAD_OF_TIME_CALLER:
        return None
    from nt_triton.aot import BUILDER

    return BUILDER
