"""Compiling kernels for a named GPU target, in parallel, without a GPU.

:func:`parse_target` reads ``target=`` (``"sm_90"``, ``"sm90"``, ``90``,
``"cuda:90:32"``; None: the current GPU's).  :func:`compile_all` compiles
every job (one specialisation of one kernel each) with Triton: in worker
processes, one per CPU core (``python -m nt_triton.aot._worker``, started
with Triton's interpreter off, so builds under ``TRITON_INTERPRET=1`` and
builds at import time work alike), or in this process for kernels that refer
to objects a worker cannot import.  Each result is a :class:`Binary`: the
cubin and what launching it needs, down to the parameters the compiled
entry point takes (read from its PTX, so Triton's scratch pointers count as
this Triton version has them).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninetoothed.errors import CodegenError
from nt_triton.description import compile_from_job

__all__ = ["Binary", "Target", "compile_all", "metadata", "parse_target", "target_name"]

Target = tuple[str, int, int]

_TARGET = re.compile(r"(?:cuda:)?(?:sm_?)?(\d+)a?(?::(\d+))?\Z")


@dataclass(frozen=True)
class Binary:
    """A compiled kernel: its cubin and how to launch it."""

    cubin: bytes
    name: str
    """The entry point's name in the cubin."""
    shared: int
    """Dynamic shared memory per program, in bytes."""
    threads: int
    """Threads per program (warps times the warp size)."""
    parameters: tuple[str, ...]
    """The entry point's PTX parameter types, in order (``".u64"``, ``".u32"``, ``".f32"``)."""


def parse_target(target: str | None, function: str = "make") -> Target:
    """``(backend, compute capability, warp size)`` of ``target``; None: the current GPU's."""
    if target is None:
        return _current_target(function)
    match = _TARGET.match(str(target).strip().lower())
    if match is None or int(match.group(1)) < 10:
        raise ValueError(
            f"{function}: target={target!r} names no GPU architecture; give one as 'sm_90' "
            "(or 90, 'sm_80', 'cuda:90:32')"
        )
    return ("cuda", int(match.group(1)), int(match.group(2) or 32))


def target_name(target: Target) -> str:
    """``"sm_90"`` for ``("cuda", 90, 32)``."""
    return f"sm_{target[1]}"


def _current_target(function: str) -> Target:
    """The current GPU's target; a clear error where there is none."""
    try:
        from triton.runtime import driver

        current = driver.active.get_current_target()
    except Exception as error:  # noqa: BLE001 - no driver, no GPU: say what to do
        raise ValueError(
            f"{function}: no GPU to compile for here ({type(error).__name__}: {error}); name "
            "the target architecture, e.g. target='sm_90'"
        ) from error
    if current.backend != "cuda":
        raise ValueError(
            f"{function}: the current GPU is a {current.backend} device; C libraries are built "
            "for NVIDIA GPUs: name the target, e.g. target='sm_90'"
        )
    return ("cuda", int(current.arch), int(current.warp_size))


def metadata(kernel: Any) -> dict[str, Any]:
    """What launching a ``CompiledKernel`` needs, as JSON data; raises :class:`CodegenError`
    for what a C launcher cannot provide (scratch memory, clusters)."""
    data = kernel.metadata
    for field in ("global_scratch_size", "profile_scratch_size"):
        if int(getattr(data, field, 0) or 0):
            raise CodegenError(
                f"the compiled kernel needs {field.split('_')[0]} scratch memory, which C "
                "libraries do not provide yet"
            )
    cooperative = bool(getattr(data, "launch_cooperative_grid", False))
    if int(getattr(data, "num_ctas", 1) or 1) != 1 or cooperative:
        raise CodegenError("the compiled kernel needs a cluster or cooperative launch")
    entry = re.search(r"\.entry\s+([\w$]+)\s*\((.*?)\)", kernel.asm["ptx"], re.S)
    assert entry is not None, "Triton's PTX has no entry point"
    types = re.findall(r"\.param\s+(\.\w+)", entry.group(2))
    return {
        "name": entry.group(1),
        "shared": int(data.shared),
        "threads": int(data.num_warps) * int(getattr(data, "warp_size", 32) or 32),
        "parameters": types,
    }


def compile_all(
    jobs: Sequence[dict[str, Any]],
    in_process: Sequence[Any],
    labels: Sequence[str],
    target: Target,
) -> list[Binary]:
    """Compile every job; ``in_process[i]`` is job ``i``'s loaded kernel when it must be
    compiled here (else None); ``labels`` name the jobs in errors."""
    with tempfile.TemporaryDirectory(prefix="ninetoothed-aot-") as directory:
        outputs = [str(Path(directory) / f"{index}.cubin") for index in range(len(jobs))]
        answers: list[dict[str, Any] | None] = [None] * len(jobs)
        remote = [i for i in range(len(jobs)) if in_process[i] is None]
        answered = _run_workers([{**jobs[i], "out": outputs[i]} for i in remote])
        for index, remote_answer in zip(remote, answered):
            answers[index] = remote_answer
        for index in range(len(jobs)):
            if in_process[index] is not None:
                answers[index] = _run_here(jobs[index], in_process[index], outputs[index])
        binaries = []
        for index, answer in enumerate(answers):
            assert answer is not None
            if not answer.get("ok"):
                raise CodegenError(
                    f"{labels[index]}: Triton could not compile it for {target_name(target)}:\n"
                    f"{_excerpt(str(answer.get('error')))}"
                )
            binaries.append(
                Binary(
                    Path(outputs[index]).read_bytes(),
                    answer["name"],
                    answer["shared"],
                    answer["threads"],
                    tuple(answer["parameters"]),
                )
            )
    return binaries


def _run_here(job: dict[str, Any], function: Any, out: str) -> dict[str, Any]:
    try:
        kernel = compile_from_job(job, function)
        Path(out).write_bytes(kernel.asm["cubin"])
        return {"ok": True, **metadata(kernel)}
    except Exception as error:  # noqa: BLE001 - reported with the others, by label
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def _run_workers(jobs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answers to ``jobs``, in order, from worker processes (one per CPU core)."""
    if not jobs:
        return []
    count = max(1, min(len(jobs), os.cpu_count() or 1))
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    environment["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    processes = []
    for worker in range(count):
        process = subprocess.Popen(  # noqa: S603 - our own module, our interpreter
            [sys.executable, "-m", "nt_triton.aot._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            text=True,
        )
        lines = "".join(json.dumps(job) + "\n" for job in jobs[worker::count])
        processes.append((process, lines))

    def communicate(item: tuple[subprocess.Popen[str], str]) -> list[dict[str, Any]]:
        output, _ = item[0].communicate(item[1])
        return [json.loads(line) for line in output.splitlines() if line.strip()]

    # A thread per worker feeds and reads it: every worker compiles at once.
    with concurrent.futures.ThreadPoolExecutor(count) as executor:
        answers = list(executor.map(communicate, processes))
    ordered = []
    for index in range(len(jobs)):
        mine = answers[index % count]
        position = index // count
        died = {"ok": False, "error": "the compile worker died (LLVM or ptxas aborted)"}
        ordered.append(mine[position] if position < len(mine) else died)
    return ordered


def _excerpt(text: str, lines: int = 16) -> str:
    """The part of a compile failure worth reading: ptxas's verdict, else the end."""
    fatal = [line.strip() for line in text.splitlines() if "ptxas fatal" in line]
    if fatal:
        return f"{fatal[0]} (Triton compiles for sm_50 and later, as its ptxas supports)"
    return "\n".join(text.strip().splitlines()[-lines:])
