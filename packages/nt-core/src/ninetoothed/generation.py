"""Upstream's ``ninetoothed.generation``: where generated files go by default.

Upstream programs and tests write ahead-of-time libraries into
:data:`CACHE_DIR` (``ninetoothed.make(..., caller="cuda",
output_dir=ninetoothed.generation.CACHE_DIR)``).  It is ``~/.ninetoothed``,
as upstream, created when this module is imported; where the home directory
cannot hold it, a directory of the user's under the system's temporary one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["CACHE_DIR"]


def _cache_dir() -> Path:
    """``~/.ninetoothed``, created; else a fallback under the temporary directory."""
    try:
        path = Path.home() / ".ninetoothed"
        path.mkdir(exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except (OSError, RuntimeError):  # RuntimeError: no home directory at all
        pass
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    path = Path(tempfile.gettempdir()) / f"ninetoothed-{uid}"
    path.mkdir(exist_ok=True)
    return path


CACHE_DIR: Path = _cache_dir()
"""The directory upstream's programs give as ``output_dir``."""
