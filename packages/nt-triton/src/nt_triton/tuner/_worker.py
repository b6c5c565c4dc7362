"""A compile worker: ``python -m nt_triton.tuner._worker``, driven by :mod:`._workers`.

Reads one JSON job per line on stdin — a kernel's cached source file, its
function name, a specialisation, launch options and a target — compiles it
with ``triton.compile`` (which fills Triton's disk cache, so the parent's
own compile of the same job is a cache hit) and answers one JSON line on its
original stdout.  It never touches a GPU: the target is explicit.  Run in its
own session, so the parent can kill it and its ``ptxas`` together when a
compile outlives its budget.

Before it reads its first job, a worker imports Triton's compiler
(:func:`get_ready`).  It takes Triton's cache key (a hash of Triton's sources
and its compiler library, hundreds of megabytes, which Triton computes once
per process, at the first compile) from its jobs (:data:`._workers.KEY_FIELD`)
where the parent put it there: the key took 0.35-0.8 s of every worker's
first compile on an H100 host, fifteen workers hashing at once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nt_triton._launch.compiled import Specialisation, compile_kernel
from nt_triton.cache import _memos
from nt_triton.tuner._workers import KEY_FIELD

__all__ = ["get_ready", "main", "run", "take_key"]

_MODULES: dict[str, Any] = _memos.register({}, "nt_triton.tuner._worker._MODULES", "sources")
"""This worker's kernel modules, by source file."""


def compiled(job: dict[str, Any], function: Any = None) -> Any:
    """The ``CompiledKernel`` of one job (``function``: the kernel, else loaded from the
    job's path)."""
    from triton.backends.compiler import GPUTarget

    from nt_triton.cache import _sources as sources

    if function is None:
        path = job["path"]
        module = _MODULES.get(path)
        if module is None:
            module = _MODULES[path] = sources.load(Path(path), {})
        function = getattr(module, job["name"])
    specialisation = Specialisation(
        tuple(tuple(item) for item in job["signature"]),
        tuple(tuple(item) for item in job["constexprs"]),
        tuple(tuple(item) for item in job["attrs"]),
    )
    return compile_kernel(
        function,
        specialisation,
        GPUTarget(*job["target"]),
        job["num_warps"],
        job["num_stages"],
        job.get("maxnreg"),
    )


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Compile one job; the answer says how long it took and how much shared memory it uses."""
    began = time.perf_counter()
    if KEY_FIELD in job:
        take_key(job[KEY_FIELD])
    kernel = compiled(job)
    return {
        "ok": True,
        "seconds": time.perf_counter() - began,
        "shared": int(getattr(kernel.metadata, "shared", 0) or 0),
    }


def serve(answer_to: Callable[[dict[str, Any]], dict[str, Any]], limit: int = 4000) -> None:
    """Answer jobs read from stdin with ``answer_to`` until stdin closes (failures are
    answers too, their message cut to ``limit`` characters)."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything printed while compiling goes to stderr, not the protocol
    for line in sys.stdin:
        try:
            answer = answer_to(json.loads(line))
        except BaseException as error:  # noqa: BLE001 - every failure is an answer
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"[-limit:]}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()


def get_ready() -> None:
    """Import Triton's compiler now, while no job waits (see the module docstring)."""
    import triton.compiler.compiler  # noqa: F401


def take_key(key: str) -> None:
    """Use ``key`` as Triton's cache key in this process (the parent's: see the module
    docstring); Triton's ``get_cache_key`` calls the module's function at each compile."""
    from triton.runtime import cache

    cache.triton_key = lambda: key


def main() -> None:
    """Get ready, then serve jobs until stdin closes."""
    try:
        get_ready()
    except Exception:  # noqa: BLE001, S110 - the first job then pays for it, or fails itself
        pass
    serve(run)


if __name__ == "__main__":
    main()
