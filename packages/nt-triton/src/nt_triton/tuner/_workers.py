"""Compiling tuning configurations in parallel, each within a time budget.

Triton compiles in process (MLIR and LLVM through bindings, which cannot be
interrupted) and runs ``ptxas`` with no timeout, so one oversized
configuration can hang a call.  The tuner therefore compiles in worker
processes (:mod:`._worker`), each in its own session: at a job's deadline the
parent kills the worker's process group (``ptxas`` included), records the
configuration as over budget, and starts a new worker.  A worker that dies
(LLVM aborts the process on some errors) costs its job, not the call.
Workers are started on the first tuning of a process (or before it, while a
kernel about to be tuned is still being prepared: :mod:`._early`) and kept
for later ones; the caller hears of each job as it finishes, so it can load
what has compiled while the rest compile.  Each job carries the parent's Triton
cache key (:data:`KEY_FIELD`), so no worker hashes Triton's compiler
library itself.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

__all__ = ["KEY_FIELD", "Answer", "CompilePool", "pool", "triton_key"]

Answer = dict[str, Any]

KEY_FIELD = "triton_key"
"""The job field a worker gets its parent's Triton cache key in (computed by the same
installation: the key hashes files both processes read)."""


_KEY: list[str | None] = []
"""``[key or None]`` once :func:`triton_key` has answered."""
_KEY_LOCK = threading.Lock()


def triton_key() -> str | None:
    """This process's Triton cache key, or None where Triton cannot give one (the workers
    then compute their own).  Computed once, by Triton's own function (which memoises it
    for this process's compiles too), by whichever thread asks first while the others
    wait: Triton's memo does not stop two threads from hashing at once."""
    if not _KEY:
        with _KEY_LOCK:
            if not _KEY:
                try:
                    from triton.runtime import cache

                    _KEY.append(str(cache.triton_key()))
                except Exception:  # noqa: BLE001 - a worker's own key is as good, only slower
                    _KEY.append(None)
    return _KEY[0]


class _Worker:
    def __init__(self) -> None:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.process = subprocess.Popen(  # noqa: S603 - our own module, our interpreter
            [sys.executable, "-m", "nt_triton.tuner._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=environment,
            text=True,
        )
        self.job: int | None = None
        self.deadline = 0.0

    @property
    def output(self) -> IO[str]:
        assert self.process.stdout is not None
        return self.process.stdout

    def send(self, index: int, job: Answer, budget: float) -> bool:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(job) + "\n")
            self.process.stdin.flush()
        except OSError:
            return False
        self.job = index
        self.deadline = time.monotonic() + budget
        return True

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # the worker and its ptxas
        except OSError:
            pass
        self.process.wait()


class CompilePool:
    """Worker processes that compile jobs, each within a budget."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.workers: list[_Worker] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the workers now (they import Triton while the caller does other work)."""
        while len(self.workers) < self.size:
            self.workers.append(_Worker())

    def warm(self) -> None:
        """Start the workers now unless a compile is using the pool (then it has them)."""
        if self._lock.acquire(blocking=False):
            try:
                self.start()
            finally:
                self._lock.release()

    def run(
        self,
        jobs: Sequence[Answer],
        budget: float,
        done: Callable[[int, Answer], None] | None = None,
        limit: int | None = None,
    ) -> list[Answer]:
        """Compile every job, at most ``limit`` at once (default: on every worker); each
        answer is ``{"ok": True, ...}`` or ``{"ok": False, "error"}``, and ``done(index,
        answer)`` hears of each as it finishes."""
        key = triton_key()
        if key is not None:  # each worker takes the parent's (see _worker.take_key)
            jobs = [{**job, KEY_FIELD: key} for job in jobs]
        with self._lock:
            self.start()
            return self._run(jobs, budget, done, limit or self.size)

    def _run(
        self,
        jobs: Sequence[Answer],
        budget: float,
        done: Callable[[int, Answer], None] | None,
        limit: int,
    ) -> list[Answer]:
        answers: list[Answer | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))
        finished: list[int] = []
        selector = selectors.DefaultSelector()

        def finish(worker: _Worker, answer: Answer) -> None:
            assert worker.job is not None
            answers[worker.job] = answer
            finished.append(worker.job)
            worker.job = None

        def replace(worker: _Worker) -> None:
            with contextlib.suppress(KeyError):  # one that failed to take a job is not in it
                selector.unregister(worker.output)
            worker.kill()
            self.workers[self.workers.index(worker)] = _Worker()

        def dispatch() -> None:
            busy = sum(w.job is not None for w in self.workers)
            for worker in list(self.workers):
                if worker.job is None and pending and busy < limit:
                    index = pending.pop(0)
                    if not worker.send(index, jobs[index], budget):
                        pending.insert(0, index)
                        replace(worker)
                        continue
                    busy += 1
                    selector.register(worker.output, selectors.EVENT_READ, worker)

        try:
            while pending or any(w.job is not None for w in self.workers):
                dispatch()
                busy = [w for w in self.workers if w.job is not None]
                if not busy:
                    continue
                timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
                for key, _ in selector.select(timeout):
                    worker = key.data
                    line = worker.output.readline()
                    if line:
                        selector.unregister(worker.output)
                        finish(worker, json.loads(line))
                    else:
                        code = worker.process.poll()
                        finish(worker, {"ok": False, "error": f"compile worker died ({code})"})
                        replace(worker)
                now = time.monotonic()
                for worker in list(self.workers):
                    if worker.job is not None and now >= worker.deadline:
                        finish(
                            worker,
                            {"ok": False, "error": f"over the compile budget ({budget:g} s)"},
                        )
                        replace(worker)
                # Free workers get their next jobs before the caller's work on what
                # finished (it loads each compiled kernel while the others compile).
                dispatch()
                for index in finished:
                    if done is not None:
                        done(index, answers[index] or {})
                finished.clear()
        finally:
            selector.close()
        return [a if a is not None else {"ok": False, "error": "not compiled"} for a in answers]

    def close(self) -> None:
        """Stop every worker."""
        for worker in self.workers:
            if worker.process.stdin is not None:
                try:
                    worker.process.stdin.close()
                except OSError:
                    pass
            worker.kill()
        self.workers = []


_POOL: CompilePool | None = None


def pool(size: int) -> CompilePool:
    """The process's compile pool, with at least ``size`` workers (created on first use,
    grown when a later tuning asks for more, never shrunk: a worker's start, which
    imports Triton, costs more than an idle one; stopped at exit)."""
    global _POOL
    if _POOL is None:
        _POOL = CompilePool(size)
        atexit.register(_POOL.close)
    _POOL.size = max(_POOL.size, size)
    return _POOL
