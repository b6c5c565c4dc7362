"""The first call of ``nt_torch.ops.mm`` at 4096^3 (tuning included): 1 rank against N.

    python benchmarks/first_call_tuning.py --compare [--ranks 2] [--rounds 3]
    torchrun --standalone --nproc-per-node=N benchmarks/first_call_tuning.py [--together]

``--compare`` runs the job under ``torchrun`` itself, each run in fresh caches
(``NINETOOTHED_CACHE_DIR`` and ``TRITON_CACHE_DIR`` in new empty folders, so
the first call tunes and compiles): 1 rank, then ``--ranks`` ranks tuning
together (``nt_triton.tuner.tune_together``), alternated over ``--rounds``
rounds so that a drifting clock or a busy host weighs on both alike
(``--alone``: then ``--ranks`` ranks each tuning on its own, once).  It
prints each run's breakdown, each mode's median (the slowest rank's
seconds), the ratio of N ranks together to 1 rank (the floor: at most 1),
and whether every rank of every run chose the same configuration;
``--jsonl PATH`` writes every run's JSON line.

``--stand-in`` runs the same comparison without a GPU (gloo on the CPU): the
tuner compiles a small matrix product's 24 configurations for ``sm_90`` in
its workers, and loads and timings are stood in
(:mod:`first_call_stand_in`), so the phases of 1 rank and N can be seen on
any machine.

Under ``torchrun`` (one run), each rank times its first call (float16,
synchronised) and records the tuner's phases (:mod:`nt_triton.tuner._trace`);
rank 0 prints one JSON line: every rank's seconds, configuration, phases
(per span: when the first began and the last ended, in seconds after the
call's start, their total, count and longest), CPUs and compile workers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SPANS = (
    "start workers",
    "agree",
    "compile",
    "worker compile",
    "load",
    "first run",
    "phase A",
    "leaders",
    "phase B",
    "gather",
    "write",
)
"""The tuner's spans, in the order a tuning goes through them."""


def _record_choices() -> list[dict[str, Any]]:
    """The configurations the tuner chooses in this process, as they are chosen."""
    from nt_triton.tuner._core import Tuner

    chosen: list[dict[str, Any]] = []
    choose = Tuner.choose

    def recorded(self: Tuner, *args: Any, **kwargs: Any) -> Any:
        configuration = choose(self, *args, **kwargs)
        chosen.append(
            {
                "kernel": self.name,
                "values": dict(configuration.values),
                "num_warps": configuration.num_warps,
                "num_stages": configuration.num_stages,
            }
        )
        return configuration

    Tuner.choose = recorded  # type: ignore[method-assign]
    return chosen


def rank_main(jointly: bool, n: int) -> None:
    """One rank of the job: time the first call; rank 0 prints the job's JSON line."""
    import torch
    import torch.distributed as dist

    from nt_torch import ops
    from nt_torch._distributed import process_group
    from nt_triton import knobs
    from nt_triton.tuner import _together as together
    from nt_triton.tuner import _trace as trace
    from nt_triton.tuner import tune_together

    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    tune_together(jointly)
    chosen = _record_choices()
    spans = trace.record()
    a = torch.randn(n, n, dtype=torch.float16, device=device)
    b = torch.randn(n, n, dtype=torch.float16, device=device)
    dist.barrier()
    torch.cuda.synchronize()
    start = time.perf_counter()
    c = ops.mm(a, b)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    error = float((c.float() - a.float() @ b.float()).abs().max())
    answers: list[Any] = [None] * dist.get_world_size()
    mine = {
        "seconds": seconds,
        "chosen": chosen,
        "error": error,
        "phases": trace.summary(spans, start),
        "cpus": knobs.usable_cpus(),
        "compile_workers": together.workers(together.group(process_group)),
    }
    dist.all_gather_object(answers, mine)
    if dist.get_rank() == 0:
        summary = {
            "ranks": len(answers),
            "together": jointly,
            "first_call_seconds": [round(answer["seconds"], 3) for answer in answers],
            "same_configuration": all(a["chosen"] == answers[0]["chosen"] for a in answers),
            "configurations": [answer["chosen"] for answer in answers],
            "max_error": max(answer["error"] for answer in answers),
            "phases": [answer["phases"] for answer in answers],
            "cpus": answers[0]["cpus"],
            "compile_workers": [answer["compile_workers"] for answer in answers],
        }
        print(json.dumps(summary), flush=True)
    dist.destroy_process_group()


def breakdown(run: dict[str, Any]) -> list[str]:
    """A run's phases, one line per rank: each span's total seconds (and count where
    several), from the call's start to its end."""
    lines = []
    for rank, (seconds, phases) in enumerate(zip(run["first_call_seconds"], run["phases"])):
        began = min((p["first"] for p in phases.values()), default=seconds)
        ended = max((p["last"] for p in phases.values()), default=seconds)
        parts = [f"before tuning {began:.3f}"]
        for name in SPANS:
            phase = phases.get(name)
            if phase is None:
                continue
            if name == "worker compile":
                part = f"{name} {phase['count']} x, longest {phase['longest']:.3f}"
                parts.append(part + f", sum {phase['seconds']:.3f}")
            elif phase["count"] > 1:
                parts.append(f"{name} {phase['count']} x {phase['seconds']:.3f}")
            else:
                parts.append(f"{name} {phase['seconds']:.3f}")
        parts.append(f"after tuning {max(0.0, seconds - ended):.3f}")
        lines.append(f"  rank {rank} ({seconds:.3f} s): " + ", ".join(parts))
    return lines


def one_run(
    ranks: int, jointly: bool, size: int, timeout: float, stand_in: bool = False
) -> dict[str, Any]:
    """One job under ``torchrun`` in fresh caches; its JSON line (or why there is none)."""
    with tempfile.TemporaryDirectory(prefix="nt-first-call-") as folder:
        environment = dict(os.environ)
        environment.pop("NINETOOTHED_TUNE_TOGETHER", None)  # --together decides
        environment.pop("TRITON_INTERPRET", None)  # compiled for real, stand-in or not
        environment.update(
            NINETOOTHED_CACHE_DIR=str(Path(folder, "nt")),
            TRITON_CACHE_DIR=str(Path(folder, "triton")),
        )
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={ranks}",
            __file__,
            "--size",
            str(size),
            *(["--together"] if jointly else []),
            *(["--stand-in"] if stand_in else []),
        ]
        try:
            done = subprocess.run(  # noqa: S603 - this script, this interpreter
                command, env=environment, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"failed": f"{ranks} rank(s): over {timeout:g} s"}
    for line in done.stdout.splitlines():
        if line.startswith('{"ranks"'):
            run: dict[str, Any] = json.loads(line)
            return run
    raised = re.compile(r"\w(Error|Exception): ")
    errors = [line for line in done.stderr.splitlines() if raised.search(line)]
    said = errors[0] if errors else done.stderr[-2000:]
    return {"failed": f"{ranks} rank(s), status {done.returncode}: {said}"}


def compare(arguments: argparse.Namespace) -> int:
    """Alternate 1 rank and N ranks tuning together; print the medians and their ratio."""
    modes = [(1, False), (arguments.ranks, True)] * arguments.rounds
    if arguments.alone:
        modes.append((arguments.ranks, False))
    runs: dict[str, list[float]] = {}
    failures = 0
    for ranks, jointly in modes:
        run = one_run(ranks, jointly, arguments.size, arguments.timeout, arguments.stand_in)
        if arguments.jsonl:
            with open(arguments.jsonl, "a") as stream:
                stream.write(json.dumps(run) + "\n")
        name = f"{ranks} rank{'s' if ranks > 1 else ''}" + (" together" if jointly else "")
        if "failed" in run:
            failures += 1
            print(f"{name}: FAILED {run['failed']}", flush=True)
            continue
        slowest = max(run["first_call_seconds"])
        runs.setdefault(name, []).append(slowest)
        same = "" if run["same_configuration"] else "  RANKS CHOSE DIFFERENT CONFIGURATIONS"
        print(f"{name}: {slowest:.3f} s, workers {run['compile_workers']}{same}", flush=True)
        print("\n".join(breakdown(run)), flush=True)
        failures += 0 if run["same_configuration"] else 1
    print()
    for name, seconds in runs.items():
        print(f"{name}: median {statistics.median(seconds):.3f} s of {seconds}")
    one, many = runs.get("1 rank"), runs.get(f"{arguments.ranks} ranks together")
    if one and many:
        ratio = statistics.median(many) / statistics.median(one)
        verdict = "ok" if ratio <= 1 else "SLOWER"
        print(f"{arguments.ranks} ranks together / 1 rank: {ratio:.3f} ({verdict})")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """``--compare``: drive the runs; else one rank of a ``torchrun`` job."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compare", action="store_true", help="1 rank against --ranks")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--alone", action="store_true", help="also --ranks ranks alone, once")
    parser.add_argument("--jsonl", help="append each run's JSON line to this file")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--together", action="store_true")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--stand-in", action="store_true", help="on the CPU, loads stood in")
    arguments = parser.parse_args(argv)
    if arguments.compare:
        return compare(arguments)
    if arguments.stand_in:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import first_call_stand_in

        first_call_stand_in.rank_main(arguments.together)
    else:
        rank_main(arguments.together, arguments.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
