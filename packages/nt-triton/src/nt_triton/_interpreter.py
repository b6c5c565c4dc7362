"""Triton's interpreter from many threads: one launch at a time, the GPU check on its own.

Triton's interpreter keeps a launch's state process-wide: it patches
``triton.language`` while a kernel runs (and restores it after), and keeps
the grid's size and the running program's index on one shared builder.  Two
threads launching at once see each other's half: the language un-patched
under a running kernel ("Did you forget to add @triton.jit?"), ``x >=
grid_dim[0]``, or wrong results.  So every interpreted launch holds
:data:`LOCK` (:func:`running`), which also installs nt-triton's bfloat16
arithmetic (:mod:`nt_triton._interpreted_bfloat16`) for its duration.

The GPU check (:mod:`nt_triton._gpu_check`) runs Triton's front end, which
must see Triton as on a GPU machine: the language un-patched and the
``interpret`` knob off.  It holds the same lock (:func:`compiling`), and
turns the knob off for its own thread only: setting ``triton.knobs.runtime.
interpret`` would also write ``TRITON_INTERPRET=0`` into the environment,
which other threads read to decide whether they interpret at all.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ninetoothed.runtime import syntax_trees
from nt_triton import _interpreted_bfloat16 as bfloat16

__all__ = ["LOCK", "compiling", "running"]

LOCK = syntax_trees.LOCK
"""Held by interpreted launches and by Triton's front end (re-entrant: a launch's
deferred GPU check, a kernel module loaded during a launch).  It is core's lock for
syntax-tree work, which making a kernel holds: Triton rewrites and parses the kernel's
syntax tree as it interprets or checks it, and CPython 3.11 fails two threads converting
syntax trees at once (:mod:`ninetoothed.runtime.syntax_trees`)."""


@contextlib.contextmanager
def running() -> Iterator[None]:
    """An interpreted launch: alone in the process, bfloat16 computed as on a GPU."""
    with LOCK, bfloat16.patched():
        yield


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Triton's front end on this thread as on a GPU machine (``interpret`` off here only);
    alone in the process."""
    import triton.knobs

    with LOCK:
        knobs = triton.knobs.runtime
        triton.knobs.runtime = _NotInterpreting(knobs, threading.get_ident())
        try:
            yield
        finally:
            triton.knobs.runtime = knobs


class _NotInterpreting:
    """Triton's runtime knobs, with ``interpret`` off for one thread; every other read and
    write goes to the knobs themselves."""

    def __init__(self, knobs: Any, thread: int) -> None:
        object.__setattr__(self, "_knobs", knobs)
        object.__setattr__(self, "_thread", thread)

    def __getattr__(self, name: str) -> Any:
        if name == "interpret" and threading.get_ident() == self._thread:
            return False
        return getattr(self._knobs, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._knobs, name, value)
