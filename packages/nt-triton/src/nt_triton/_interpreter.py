"""Triton's interpreter from many threads: one launch at a time, the GPU check on its own.

Triton's interpreter keeps a launch's state process-wide: it patches
``triton.language`` while a kernel runs (and restores it after), and keeps
the grid's size and the running program's index on one shared builder.  Two
threads launching at once see each other's half: the language un-patched
under a running kernel ("Did you forget to add @triton.jit?"), ``x >=
grid_dim[0]``, or wrong results.  So every interpreted launch holds
:data:`LOCK` (:func:`running`), which also installs nt-triton's bfloat16
arithmetic (:mod:`nt_triton._interpreted_bfloat16`) for its duration, and
passes Python floats as ``fp32`` scalars (:func:`float_arguments`).

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
    """An interpreted launch: alone in the process, bfloat16 and float arguments as on a GPU."""
    with LOCK, bfloat16.patched(), float_arguments():
        yield


@contextlib.contextmanager
def float_arguments() -> Iterator[None]:
    """Python floats (and ``np.float32`` ones) given for a kernel's parameters arrive as
    ``fp32`` scalars, as on a GPU.

    Triton's launcher passes a Python float as an ``fp32`` argument, so
    ``scale * x`` computes in ``fp32`` whatever ``x``'s type.  Its interpreter
    hands the kernel the bare Python float, which Triton's promotion treats as
    a literal, taking ``x``'s type: a ``float16`` tile computed in ``float16``
    and an ``fp8`` one in ``fp8`` (the interpreter's arithmetic there gives 0).
    Not thread-safe by itself: callers hold :data:`LOCK`.
    """
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as triton_interpreter

    convert = getattr(triton_interpreter, "_implicit_cvt", None)
    if convert is None:  # another Triton's interpreter: its own conversion stands
        yield
        return

    def converted(argument: Any) -> Any:
        if isinstance(argument, (float, np.float32)):
            value = np.array([argument], dtype=np.float32)
            return tl.tensor(triton_interpreter.TensorHandle(value, tl.float32), tl.float32)
        return convert(argument)

    triton_interpreter._implicit_cvt = converted
    try:
        yield
    finally:
        triton_interpreter._implicit_cvt = convert


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
