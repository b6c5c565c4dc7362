"""The first call of ``ops.mm`` and ``ops.scaled_dot_product_attention`` on cold caches.

    python benchmarks/first_call.py [--rounds 3] [--cases mm,sdpa,sdpa-causal] [--jsonl F]

Issue 27's floor: at most 3 s.  Each run is a fresh Python process with fresh
caches (``NINETOOTHED_CACHE_DIR`` and ``TRITON_CACHE_DIR`` in new empty
folders, ``NINETOOTHED_MAX_NUM_CONFIGS`` unset: the real tuning spaces), so
the call generates the kernel, compiles every candidate and tunes.  The
process first makes its inputs and imports ``nt_torch.ops`` (both timed
apart), then times the call, synchronised, with the tuner's phases recorded
(:mod:`nt_triton.tuner._trace`).  The cases run in turn, round after round,
so a busy host weighs on all alike; the summary gives each case's median and
whether it meets the floor, and one line of phases per run (when each began
and ended, in seconds after the call's start).

``--python`` runs the children with another interpreter; ``--env NAME=VALUE``
(repeatable) sets a variable in them (an A/B of a knob).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

FLOOR_SECONDS = 3.0
"""Issue 27: a first call on cold caches takes at most this long."""

CASES = {
    "mm": (
        "[torch.randn(4096, 4096, device='cuda', dtype=torch.float16) for _ in range(2)]",
        "ops.mm(*inputs)",
    ),
    "sdpa": (
        "[torch.randn(4, 48, 1024, 64, device='cuda', dtype=torch.float16) for _ in range(3)]",
        "ops.scaled_dot_product_attention(*inputs)",
    ),
    "sdpa-causal": (
        "[torch.randn(2, 16, 4096, 128, device='cuda', dtype=torch.float16) for _ in range(3)]",
        "ops.scaled_dot_product_attention(*inputs, is_causal=True)",
    ),
}
"""``name: (the inputs, the call)``: mm at 4096^3 and the paper's attention shapes, float16."""

CHILD = """
import json, time, torch
inputs = {inputs}
torch.cuda.synchronize()
began = time.perf_counter()
from nt_torch import ops
from nt_triton.tuner import _trace as trace
imported = time.perf_counter()
spans = trace.record()
{call}
torch.cuda.synchronize()
ended = time.perf_counter()
print(json.dumps({{"import_s": imported - began, "first_call_s": ended - imported,
                  "phases": trace.summary(spans, imported)}}))
"""
"""One run: the import and the call timed apart, the tuner's phases after the call's start."""

PHASES = ("compile", "worker compile", "load", "phase A", "phase B")
"""The phases a run's line shows, in the order a tuning goes through them."""


def one_run(case: str, python: str, extra: dict[str, str], timeout: float) -> dict[str, Any]:
    """``case``'s first call in a fresh process on fresh caches; its JSON, or the failure."""
    inputs, call = CASES[case]
    with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as triton:
        environment = dict(os.environ, NINETOOTHED_CACHE_DIR=ours, TRITON_CACHE_DIR=triton)
        environment.pop("NINETOOTHED_MAX_NUM_CONFIGS", None)
        environment.update(extra)
        source = CHILD.format(inputs=inputs, call=call)
        try:
            done = subprocess.run(  # noqa: S603 - our own child program
                [python, "-c", source],
                env=environment,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"case": case, "failure": f"over {timeout:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"case": case, "failure": done.stderr.strip()[-400:] or f"exit {done.returncode}"}
    return {"case": case, **json.loads(lines[-1])}


def phases_line(run: dict[str, Any]) -> str:
    """One run's phases: ``name first-last`` (seconds after the call's start), and the
    workers' compiles as a count, their longest and their sum."""
    parts = []
    for name in PHASES:
        span = run.get("phases", {}).get(name)
        if span is None:
            continue
        text = f"{name} {span['first']:.2f}-{span['last']:.2f}"
        if name == "worker compile":
            text += (
                f" ({span['count']} x, longest {span['longest']:.2f}, sum {span['seconds']:.1f})"
            )
        parts.append(text)
    return ", ".join(parts)


def summary(runs: list[dict[str, Any]], cases: list[str]) -> tuple[list[str], bool]:
    """The report's lines and whether every case's median meets :data:`FLOOR_SECONDS` (a
    case with a failed run does not)."""
    lines = []
    met = True
    for case in cases:
        mine = [run for run in runs if run["case"] == case]
        failures = [run["failure"] for run in mine if "failure" in run]
        seconds = [run["first_call_s"] for run in mine if "failure" not in run]
        if failures or not seconds:
            met = False
            lines.append(f"{case}: FAILED: {failures[0] if failures else 'no run'}")
            continue
        median = statistics.median(seconds)
        verdict = "ok" if median <= FLOOR_SECONDS else "over the floor"
        met = met and median <= FLOOR_SECONDS
        listed = ", ".join(f"{s:.2f}" for s in seconds)
        lines.append(
            f"{case}: median {median:.2f} s of [{listed}] ({verdict}, floor {FLOOR_SECONDS:g} s)"
        )
        for run in mine:
            timing = f"import {run['import_s']:.2f} s; call {run['first_call_s']:.2f} s"
            lines.append(f"  {timing}: {phases_line(run)}")
    return lines, met


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the summary; 0 where every case meets the floor."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a run may take")
    parser.add_argument("--jsonl", help="write every run's JSON line here")
    arguments = parser.parse_args(argv)
    cases = arguments.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"--cases: unknown {unknown}; known: {', '.join(CASES)}")
    if any("=" not in item for item in arguments.env):
        parser.error(f"--env: expected NAME=VALUE, got {arguments.env}")
    extra = dict(item.split("=", 1) for item in arguments.env)
    runs = []
    for _ in range(arguments.rounds):
        for case in cases:
            runs.append(one_run(case, arguments.python, extra, arguments.timeout))
    if arguments.jsonl:
        with open(arguments.jsonl, "w") as stream:
            stream.writelines(json.dumps(run) + "\n" for run in runs)
    lines, met = summary(runs, cases)
    print("\n".join(lines))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
