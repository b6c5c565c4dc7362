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
    from nt_triton._backend import TritonBackend

BACKEND_NAME = "triton"
"""The name ``ninetoothed.plugins.codegen_backend`` asks for."""


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
