"""Getting a first call's tuning ready while its kernel is still being made.

A first call on a cold cache spends most of its time compiling candidates in
worker processes (:mod:`._workers`).  Before the first of them can compile,
the workers must start (each imports Triton's compiler) and Triton's cache
key must be known (a hash of Triton's compiler library, hundreds of
megabytes: 0.35 s on an H100 host, which each worker would otherwise spend
too).  Neither depends on the call, so :func:`ahead`, called as code
generation for a GPU begins, starts both in background threads while the
calling thread generates the kernel, binds the call and sizes its tiles:

* the key, once per process: any process that compiles a kernel needs it
  (Triton computes it at the first compile, a disk hit or not), so it is
  never wasted work there;
* the compile workers, where the kernel will tune: it has more than one
  configuration, tuning is on and compile workers are wanted, and nothing
  was tuned for it before (no kernel of its fingerprint is kept, or its
  table is empty: a cold cache, or a new kernel).  A kernel with a table
  starts none: its calls most likely find their configurations there, and a
  miss starts the workers as before.  The pool starts with as many workers
  as the kernel's first tuning can use, within what this process may start;
* the lean launcher's extension (a C compiler's run on a cold cache: 0.3 s on
  an H100 host), once per process, whether the kernel tunes or not: its first
  load would otherwise wait for it (an untuned first call did, after its
  compile);
* Triton's driver, once per process: on a cold Triton cache its first use
  compiles a C module (0.7 s on an H100 host), and the tuning call needs it
  (the device's target) before it sends any candidate to compile.

On an H200 host this took mm's first call at 4096^3 from 3.2-4.1 s to
2.2-2.5 s (with the key passed to the workers, :mod:`._workers`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _space_bounds as space_bounds
from nt_triton import knobs
from nt_triton.cache import _tables as table
from nt_triton.tuner import _together as together
from nt_triton.tuner import _workers as workers

__all__ = ["GPU_NODES", "ahead", "driver_settled"]

GPU_NODES = ("/dev/nvidiactl", "/dev/kfd")
"""Device nodes of NVIDIA's and AMD's GPU drivers."""

_started: set[str] = set()
"""What was started already in this process: ``"key"``, ``"driver"`` and ``"lean"`` (once
each), and kernels' fingerprints (or labels, for kernels without one): a kernel made
again starts nothing again."""
_lock = threading.Lock()


def ahead(
    spec: KernelSpec,
    fingerprint: str | None,
    kept: Path | None = None,
    kept_count: int | None = None,
) -> None:
    """Start, in the background, what a first tuning of ``spec``'s kernel needs (see the
    module docstring); ``fingerprint`` is its reuse fingerprint (None: it has none),
    ``kept`` the source file of the kernel kept for it (None: it is generated now),
    ``kept_count`` that kernel's number of configurations."""
    if not _on_a_gpu():
        return
    if _first("key"):
        _background(workers.triton_key, "key")
    if _first("driver"):
        _DRIVER[:] = [_background(_initialise_driver, "driver")]
    if _first("lean"):
        _background(_lean_extension, "lean")
    count = space_bounds.most_configurations(spec) if kept_count is None else kept_count
    if count < 2 or knobs.tuning_mode() != "on":
        return
    size = min(count, together.launcher_workers())
    if size < 2 or not _first(fingerprint or spec.label):
        return
    if kept is not None and table.read(kept.stem):
        return
    _background(lambda: workers.pool(size).warm(), "workers")


def _on_a_gpu() -> bool:
    """Whether kernels will run on a GPU here: not interpreted, and a GPU driver's device
    node present (a machine without one, such as CI's, compiles ahead of time at most)."""
    return not knobs.interpreting() and any(os.path.exists(node) for node in GPU_NODES)


_DRIVER: list[threading.Thread] = []
"""The thread initialising Triton's driver in the background, once started."""


def _initialise_driver() -> None:
    """Initialise Triton's GPU driver: on a cold Triton cache its first use compiles a C
    module with the host's C compiler (0.7 s on an H100 host), and a tuning call needs
    the driver (the device's target) before any candidate can be sent to compile.
    Touching an attribute initialises it; nothing here asks the device anything."""
    from triton.runtime import driver

    driver.active.utils  # noqa: B018 - the access is the initialisation


def driver_settled() -> None:
    """Wait for the background initialisation of Triton's driver, if one is running: a
    caller about to use the driver then finds it ready instead of initialising it a
    second time alongside (Triton's lazy driver takes no lock)."""
    for thread in list(_DRIVER):  # once joined, forgotten: later calls cost one check
        thread.join()
        _DRIVER.clear()


def _lean_extension() -> None:
    """Build (or find in Triton's cache) and load the lean launcher's extension."""
    from nt_triton._launch import lean

    lean.extension()


def _first(what: str) -> bool:
    with _lock:
        if what in _started:
            return False
        _started.add(what)
        return True


def _background(work: Callable[[], object], name: str) -> threading.Thread:
    def run() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001, S110 - the call does the same work itself, later
            pass

    thread = threading.Thread(target=run, name=f"ninetoothed-early-{name}", daemon=True)
    thread.start()
    return thread
