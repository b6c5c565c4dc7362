"""The ``triton`` entry point: registers the Triton code-generation backend.

Loading this module must stay cheap, because every ``import ninetoothed`` user
loads it through the entry point: the backend, and with it Triton, is imported
only when a kernel is first generated.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ninetoothed.hookspecs import hookimpl

if TYPE_CHECKING:
    from nt_triton.aot import TritonBuilder
    from nt_triton.backend import TritonBackend

BACKEND_NAME = "triton"
"""The name ``ninetoothed.plugins.codegen_backend`` asks for."""

AHEAD_OF_TIME_CALLER = "cuda"
"""The ``caller`` of ``make(..., caller="cuda")`` whose C libraries nt-triton builds."""


@functools.cache
def _backend() -> TritonBackend:
    """The process-wide backend, created on first use."""
    from nt_triton.backend import TritonBackend

    return TritonBackend()


@hookimpl
def ninetoothed_codegen_backend(name: str) -> TritonBackend | None:
    """Return the Triton backend when ``name`` is ``"triton"``, else ``None``."""
    if name != BACKEND_NAME:
        return None
    return _backend()


@hookimpl
def ninetoothed_ahead_of_time_builder(caller: str) -> TritonBuilder | None:
    """Return the C-library builder when ``caller`` is ``"cuda"``, else ``None``."""
    if caller != AHEAD_OF_TIME_CALLER:
        return None
    from nt_triton.aot import BUILDER

    return BUILDER
