"""Running one script in several processes released together (a barrier on files).

Each process runs ``python -m <module> <index> <count> <barrier folder> <args...>``
with ``tests/`` on its import path; it calls :func:`wait_for_the_others` when
it is ready to race, and prints one JSON object as its last line of stdout.
:func:`run_processes` starts them, releases them together once all are
ready, and returns the objects in process order (or fails, showing the
output of the processes that failed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["TESTS", "environment", "run_processes", "wait_for_the_others"]

TESTS = Path(__file__).resolve().parent.parent
"""The cross-package ``tests/`` folder (on every process's import path)."""


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``tests/`` (and the repository) on the import path."""
    result = dict(os.environ)
    paths = [str(TESTS), str(TESTS.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    result["PYTHONPATH"] = os.pathsep.join(paths)
    result.update(extra or {})
    return result


def run_processes(
    module: str,
    count: int,
    barrier: Path,
    args: Sequence[str] = (),
    *,
    extra: Mapping[str, str] | None = None,
    timeout: float = 300,
    prefix: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Run ``module`` in ``count`` processes (``prefix``: a command they run under, such
    as ``unshare``), release them together, and return each one's JSON answer."""
    barrier.mkdir(parents=True, exist_ok=True)
    processes = [
        subprocess.Popen(  # noqa: S603 - our own test script
            [*prefix, sys.executable, "-m", module, str(index), str(count), str(barrier), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(extra),
        )
        for index in range(count)
    ]
    deadline = time.monotonic() + timeout
    try:
        while len(list(barrier.glob("ready-*"))) < count:
            if any(p.poll() not in (None, 0) for p in processes) or time.monotonic() > deadline:
                break  # one failed before the barrier: collect what it said
            time.sleep(0.05)
        (barrier / "go").touch()
        outputs = [p.communicate(timeout=max(1.0, deadline - time.monotonic())) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    failed = [
        f"process {i} (status {p.returncode}):\n{err[-3000:]}\n{out[-1000:]}"
        for i, (p, (out, err)) in enumerate(zip(processes, outputs))
        if p.returncode != 0
    ]
    assert not failed, "\n".join(failed)
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def wait_for_the_others(index: int, barrier: Path, timeout: float = 300) -> None:
    """Say this process is ready, then wait until every process is (the parent says go)."""
    (barrier / f"ready-{index}").touch()
    deadline = time.monotonic() + timeout
    while not (barrier / "go").exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the other processes never became ready")
        time.sleep(0.005)
