"""Every environment knob nt-triton reads, in one place.

* ``NINETOOTHED_CACHE_DIR``: where generated sources live (default
  ``$XDG_CACHE_HOME/ninetoothed`` or ``~/.cache/ninetoothed``; ``~`` is
  expanded).  When the default cannot be written, :mod:`nt_triton.cache`
  falls back to a per-user temporary directory with a warning; a directory
  set here that cannot be written is an error.
* ``NINETOOTHED_MAX_NUM_CONFIGS``: the most auto-tuning configurations tried
  per kernel (default 32 on a GPU, 2 under Triton's interpreter).
* ``NINETOOTHED_GPU_CHECK``: under the interpreter, ``make`` also compiles the
  kernel's front end for a GPU target (:mod:`nt_triton.gpu_check`); ``0``
  turns that off (default on).
* ``TRITON_INTERPRET``: Triton's own switch; when set, kernels run through
  Triton's CPU interpreter and auto-tuning uses a stand-in benchmarker.
"""

from __future__ import annotations

import os
from pathlib import Path


def interpreting() -> bool:
    """Whether Triton's interpreter runs kernels (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def cache_dir() -> Path:
    """The directory for generated sources (``~`` expanded)."""
    configured = os.environ.get("NINETOOTHED_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "ninetoothed"


def cache_dir_is_configured() -> bool:
    """Whether ``NINETOOTHED_CACHE_DIR`` names the cache directory (no fallback then)."""
    return bool(os.environ.get("NINETOOTHED_CACHE_DIR"))


def gpu_check() -> bool:
    """Whether ``make`` checks, under the interpreter, that kernels compile for a GPU."""
    configured = os.environ.get("NINETOOTHED_GPU_CHECK", "").strip().lower()
    return configured not in ("0", "false", "off", "no")


def max_num_configs() -> int:
    """The most auto-tuning configurations to try."""
    configured = os.environ.get("NINETOOTHED_MAX_NUM_CONFIGS")
    if configured:
        return max(1, int(configured))
    return 2 if interpreting() else 32
