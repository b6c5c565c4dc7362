"""Compiling a kernel in a background thread while its calls take another kernel.

A hand-written kernel that replaces a generated one where it is faster (the
Gluon attention of :mod:`nt_triton.hopper_attention`) costs a first call its
compile on top of the generated kernel's, which that call makes anyway (the op
made its variant before it knew which kernel would run).  :class:`Aside`
instead compiles it in a thread of its own, once per specialisation, while the
calls take the generated kernel; the calls after the compile take the
hand-written one.  Triton's compile spends most of its time outside the
interpreter lock (MLIR and LLVM passes, ``ptxas``, the C compiler for the
launcher): a Python loop beside it kept 0.84 of its pace on a 2-core host.

What the thread does not do is load the binary onto the GPU: that is a CUDA
call, which stream capture in another thread forbids (torch captures in
"global" mode).  The first launch loads it, on the caller's thread, and
:meth:`Aside.ready` answers False to a call that would be that launch while the
caller captures.

The threads are not daemons: an interpreter that exits mid-compile waits for it
(seconds at most; the next process finds the kernel in Triton's cache) rather
than stop a thread inside Triton's C++ code.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Aside"]

_COMPILED = "compiled"
_LOADED = "loaded"
_FAILED = "failed"


class Aside:
    """The background compiles of one kernel, by specialisation (a key its caller
    chooses: whatever decides the kernel Triton compiles, and the device)."""

    def __init__(self, name: str) -> None:
        """``name``: the kernel's name, in warnings and thread names."""
        self.name = name
        self._states: dict[Hashable, Any] = {}
        self._compiled: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def ready(
        self,
        key: Hashable,
        compile: Callable[[], Any],
        *,
        start: bool = True,
        wait: bool = False,
        may_load: bool = True,
    ) -> bool:
        """Whether a launch of specialisation ``key`` runs without compiling now.

        The first time a key is asked for, start ``compile`` (Triton's warmup of the
        kernel for a call of that specialisation on its device, and anything else to
        do ahead) in a thread, and answer False (``start`` False: answer False and
        start nothing).  Later: False while it compiles (or, with ``wait``, once it
        has), True once it has compiled, except that a launch that would load the
        binary is refused where the caller cannot load one (``may_load`` False: a
        stream is being captured).  A compile that failed answers False for good,
        with a warning the first time (from one caller, if several ask at once)."""
        with self._lock:
            state = self._states.get(key)
            if state is None:
                if not start:
                    return False
                state = self._states[key] = self._start(key, compile)
        if isinstance(state, threading.Thread):
            if not wait:
                return False
            state.join()
            state = self._states[key]
        if isinstance(state, BaseException):
            with self._lock:  # the caller that marks it failed is the one that warns
                first = self._states[key] is state
                self._states[key] = _FAILED
            if not first:
                return False
            warnings.warn(
                f"{self.name} failed to compile ({type(state).__name__}: {state}); "
                "its calls take the generated kernel",
                RuntimeWarning,
                stacklevel=3,
            )
            return False
        if state == _COMPILED:
            if not may_load:
                return False
            with self._lock:
                self._states[key] = _LOADED  # the launch about to be made loads it
            return True
        return bool(state == _LOADED)

    def compiled(self, key: Hashable) -> Any:
        """What the compile of ``key`` returned (Triton's compiled kernel, which launches
        without the JIT's binding of arguments) once :meth:`ready` has let a launch of
        it go ahead; None before, or for a key never asked for."""
        return self._compiled.get(key) if self._states.get(key) == _LOADED else None

    def settle(self) -> None:
        """Wait for the compiles under way."""
        for state in list(self._states.values()):
            if isinstance(state, threading.Thread):
                state.join()

    def _start(self, key: Hashable, compile: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            try:
                result = compile()
            except Exception as error:  # noqa: BLE001 - reported by ready(), on the caller's thread
                with self._lock:
                    self._states[key] = error
                return
            with self._lock:
                self._compiled[key] = result
                self._states[key] = _COMPILED

        thread = threading.Thread(target=run, name=f"ninetoothed-aside-{self.name}")
        thread.start()
        return thread
