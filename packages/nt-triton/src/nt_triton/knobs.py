"""Every environment knob nt-triton reads, in one place.

* ``NINETOOTHED_CACHE_DIR``: the root of NineToothed's cache, which holds
  every kind it writes: generated sources, ``index/``, ``tuning/`` (default
  ``$XDG_CACHE_HOME/ninetoothed`` or ``~/.cache/ninetoothed``; ``~`` is
  expanded).  When the default cannot be written, :mod:`nt_triton.cache`
  falls back to a per-user temporary directory with a warning; a directory
  set here that cannot be written is an error.  Compiled binaries stay in
  Triton's cache (``TRITON_CACHE_DIR``, Triton's own knob).
* ``NINETOOTHED_MAX_NUM_CONFIGS``: the most auto-tuning configurations tried
  per kernel (default 32 on a GPU, 2 under Triton's interpreter).
* ``NINETOOTHED_TUNING``: ``on`` (default: tune on a call's first use of a
  tuning key, persist the result), ``cached`` (never tune: use persisted or
  imported results, else the space's first configuration, with a warning once),
  ``off`` (always the space's first configuration).
* ``NINETOOTHED_TUNE_TOGETHER``: ``1`` makes the processes of a job (PyTorch's
  initialised default process group, Paddle's global group) tune each new kernel specialisation
  together, each timing its share of the configurations (default ``0``;
  :func:`nt_triton.tuner.tune_together` switches it from Python).
* ``NINETOOTHED_TUNING_PROGRESS``: ``1`` shows tuning progress on stderr,
  ``0`` hides it (default: shown when stderr is a terminal).
* ``NINETOOTHED_COMPILE_BUDGET``: seconds one configuration may take to
  compile while tuning before it is pruned (default 20).
* ``NINETOOTHED_COMPILE_WORKERS``: worker processes that compile while tuning
  (default: one fewer than the CPUs this process may use (:func:`usable_cpus`),
  at most 16; processes of a job on one host tuning together
  (``LOCAL_WORLD_SIZE`` set by ``torchrun``, ``PADDLE_LOCAL_SIZE`` by Paddle's
  launcher) each take one fewer than their
  share of them; ``0`` compiles in the calling process, in threads, without a
  budget).
* ``NINETOOTHED_GPU_CHECK``: under the interpreter, ``make`` also compiles the
  kernel's front end for a GPU target (:mod:`nt_triton._gpu_check`); ``0``
  turns that off (default on).
* ``NINETOOTHED_SPLIT_LOOPS``: ``0`` keeps loops over tiles as written
  instead of splitting them into whole tiles (unmasked) and the ragged tail
  (:mod:`nt_triton._codegen.ragged_loops`; default on).  Read when a kernel is
  made; for comparing the two forms.
* ``NINETOOTHED_C_LAUNCHER``: ``off`` (or ``0``, ``false``, ``no``) launches
  every kernel through Triton's own launcher instead of NineToothed's lean C
  launcher (:mod:`nt_triton._launch.lean`; default on where it applies).
  Read once, at a process's first launch.
* ``NINETOOTHED_HOPPER_ATTENTION``: ``off`` (or ``0``, ``false``, ``no``) keeps
  the kernel library's attention forward on its NineToothed kernel on Hopper
  GPUs, instead of the warp-specialised kernel written in Gluon
  (:mod:`nt_triton.hopper_attention`; default on where it applies).  Read at
  each kernel's first launch site (a memo's recording, a first call).
* ``NINETOOTHED_HOPPER_SCALED_MM``: ``off`` likewise keeps the kernel library's
  ``scaled_mm`` (float32 sums) on its NineToothed kernel on Hopper GPUs, instead
  of the one written in Gluon (:mod:`nt_triton.hopper_scaled_mm`).
* ``NINETOOTHED_TENSOR_DESCRIPTORS``: ``off`` (or ``0``, ``false``, ``no``) keeps
  persistent programs' loads and stores of tiles on pointers instead of tensor
  descriptors (:mod:`nt_triton._codegen.descriptors`; default on where a call's
  tensors and GPU allow them).  Read when a call's plan is made.
* ``TRITON_INTERPRET``: Triton's own switch; when set, kernels run through
  Triton's CPU interpreter and tuning picks a configuration without running any.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TextIO

__all__ = [
    "MAX_COMPILE_WORKERS",
    "c_launcher",
    "cache_dir",
    "cache_dir_is_configured",
    "compile_budget",
    "compile_workers",
    "gpu_check",
    "hopper_attention",
    "hopper_scaled_mm",
    "interpreting",
    "max_num_configs",
    "split_loops",
    "tensor_descriptors",
    "tune_together",
    "tuning_mode",
    "tuning_progress",
    "usable_cpus",
]

MAX_COMPILE_WORKERS = 16
"""Compile workers one process starts by default (each a Python process holding Triton)."""


def interpreting() -> bool:
    """Whether Triton's interpreter runs kernels (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def cache_dir() -> Path:
    """The cache's configured root (``~`` expanded; :func:`nt_triton.cache.root` falls
    back from an unwritable default)."""
    configured = os.environ.get("NINETOOTHED_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "ninetoothed"


def cache_dir_is_configured() -> bool:
    """Whether ``NINETOOTHED_CACHE_DIR`` names the cache's root (no fallback then)."""
    return bool(os.environ.get("NINETOOTHED_CACHE_DIR"))


def _on(configured: str) -> bool:
    """A switch's setting: anything but ``0``, ``false``, ``off`` or ``no`` (any case) is on."""
    return configured.strip().lower() not in ("0", "false", "off", "no")


def gpu_check() -> bool:
    """Whether ``make`` checks, under the interpreter, that kernels compile for a GPU."""
    return _on(os.environ.get("NINETOOTHED_GPU_CHECK", ""))


def c_launcher() -> bool:
    """Whether launches may take the lean C launcher (``NINETOOTHED_C_LAUNCHER``)."""
    return _on(os.environ.get("NINETOOTHED_C_LAUNCHER", ""))


def hopper_attention() -> bool:
    """Whether attention's forward may take the Gluon kernel on Hopper
    (``NINETOOTHED_HOPPER_ATTENTION``)."""
    return _on(os.environ.get("NINETOOTHED_HOPPER_ATTENTION", ""))


def hopper_scaled_mm() -> bool:
    """Whether ``scaled_mm`` with float32 sums may take the Gluon kernel on Hopper
    (``NINETOOTHED_HOPPER_SCALED_MM``)."""
    return _on(os.environ.get("NINETOOTHED_HOPPER_SCALED_MM", ""))


def tensor_descriptors() -> bool:
    """Whether persistent programs may copy tiles through tensor descriptors
    (``NINETOOTHED_TENSOR_DESCRIPTORS``)."""
    return _on(os.environ.get("NINETOOTHED_TENSOR_DESCRIPTORS", ""))


def split_loops() -> bool:
    """Whether code generation splits loops over tiles (``NINETOOTHED_SPLIT_LOOPS``)."""
    return _on(os.environ.get("NINETOOTHED_SPLIT_LOOPS", ""))


def max_num_configs() -> int:
    """The most auto-tuning configurations to try."""
    configured = os.environ.get("NINETOOTHED_MAX_NUM_CONFIGS")
    if configured:
        return max(1, int(configured))
    return 2 if interpreting() else 32


def tuning_mode() -> str:
    """``on``, ``cached`` or ``off`` (``NINETOOTHED_TUNING``)."""
    mode = os.environ.get("NINETOOTHED_TUNING", "on").strip().lower() or "on"
    if mode not in ("on", "cached", "off"):
        raise ValueError(f"NINETOOTHED_TUNING={mode!r}: expected 'on', 'cached' or 'off'")
    return mode


def tuning_progress(stream: TextIO) -> bool:
    """Whether to show tuning progress on ``stream``."""
    configured = os.environ.get("NINETOOTHED_TUNING_PROGRESS")
    if configured is not None and configured.strip():
        return _on(configured)
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def compile_budget() -> float:
    """Seconds one configuration may take to compile while tuning."""
    return float(os.environ.get("NINETOOTHED_COMPILE_BUDGET") or 20)


def compile_workers(sharing: int = 1, index: int = 0) -> int:
    """Worker processes compiling while tuning (0: in the calling process).

    By default one fewer than the CPUs this process may use (it keeps one for
    loading and timing what its workers compile), at most
    :data:`MAX_COMPILE_WORKERS`.  Where ``sharing`` processes of a job tune
    together on one host, they share out that many between them (``index``:
    this one's place among them), at least one each: the host compiles on as
    many workers as one process alone would, since more compile no faster
    once its CPUs are busy (two ranks of a 32-CPU host with 15 workers each
    compiled their 12 candidates of ``mm`` in the time one rank compiled all
    24 with 16), and every worker's start costs CPU time the compiles need.
    """
    configured = os.environ.get("NINETOOTHED_COMPILE_WORKERS")
    if configured is not None and configured.strip():
        return max(0, int(configured))
    host = max(1, min(MAX_COMPILE_WORKERS, usable_cpus() - 1))
    sharing = max(1, sharing)
    return max(1, host // sharing + (1 if index % sharing < host % sharing else 0))


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (``taskset``, a job
    scheduler's binding), within a container's CPU quota (cgroup v2 ``cpu.max``);
    ``os.cpu_count()`` counts the whole host's, which a container may not have."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on this platform
        count = os.cpu_count() or 2
    quota = _cgroup_quota()
    return max(1, min(count, quota) if quota is not None else count)


def _cgroup_quota(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> int | None:
    """The CPUs a cgroup v2 quota allows, rounded up; None where there is none."""
    try:
        fields = path.read_text().split()
        return max(1, math.ceil(int(fields[0]) / int(fields[1])))
    except (OSError, ValueError, IndexError, ZeroDivisionError):  # "max": no quota
        return None


def tune_together() -> bool:
    """Whether ``NINETOOTHED_TUNE_TOGETHER`` asks a job's processes to tune together."""
    configured = os.environ.get("NINETOOTHED_TUNE_TOGETHER", "").strip().lower()
    return configured in ("1", "true", "on", "yes")
