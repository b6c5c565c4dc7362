"""Single-kernel benchmark: ours, the hand-written Triton baselines and torch.

    python benchmarks/run.py                    # every task, 5 rounds (on a GPU)
    python benchmarks/run.py --quick            # 2 short rounds: a smoke run
    python benchmarks/run.py --tasks add,mm,sdpa
    python benchmarks/run.py --smoke            # tiny shapes, Triton's interpreter, no GPU

For each task (``tasks.py``): every implementation is called once first (that
call's time, compilation and tuning included, is the *first-call* time; by
default Triton's and NineToothed's caches are emptied for the run, so it is
cold) and its output checked against torch in float32 on the same inputs; an
implementation that fails or is wrong gets no time and no ratio.  Then the
valid ones are timed in interleaved rounds (``triton.testing.do_bench``
medians, the order rotating each round); the tables report min/median/max
over rounds and the ratios of medians.  The two ceilings, a device-to-device
copy and cuBLAS float16 at 8192^3, are measured in the same run.

Writes ``bench.md`` (the tables), ``bench.json`` and ``bench.png`` (like the
paper's Figure 6) under ``--out``, else ``$OUT``, else ``bench-out/``.  Exits 1
only if a hand-written baseline is wrong: that would make every ratio a lie.
"""

from __future__ import annotations

import os
import sys
import tempfile

SMOKE = "--smoke" in sys.argv or "--interpret-smoke" in sys.argv
if SMOKE:  # read when Triton decorates a kernel: before anything imports triton
    os.environ["TRITON_INTERPRET"] = "1"
if "--warm-cache" not in sys.argv:  # cold first calls: caches of our own
    for variable in ("TRITON_CACHE_DIR", "NINETOOTHED_CACHE_DIR"):
        os.environ[variable] = tempfile.mkdtemp(prefix=variable.lower() + "-")

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours  # noqa: E402
import report  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
from measure import (  # noqa: E402
    Clock,
    Result,
    copy_bandwidth,
    first_call,
    interleaved_rounds,
    matmul_rate,  # noqa: E402
)
from tasks import Task, all_tasks  # noqa: E402

TOLERANCE = 5e-3
"""Relative error allowed against the float32 reference (float16 rounds near 5e-4)."""


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 short rounds (a smoke run)")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument("--rounds", type=int, help="timing rounds (default 5; quick 2)")
    parser.add_argument("--out", type=Path, help="output folder (default $OUT or bench-out)")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the interpreter")
    parser.add_argument("--interpret-smoke", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warm-cache", action="store_true", help="keep the compile caches")
    parser.add_argument("--no-standin", action="store_true", help="ours only from nt_torch.ops")
    parser.add_argument(
        "--first-call-limit",
        type=float,
        default=120.0,
        help="seconds one first call (compile and tuning) may take; 0: no limit (default 120)",
    )
    parser.add_argument("--list", action="store_true", help="list the tasks and exit")
    return parser.parse_args(argv)


def choose(tasks: list[Task], wanted: str | None) -> list[Task]:
    """The tasks named in ``wanted`` (all default ones when it is None)."""
    if wanted is None:
        return [t for t in tasks if t.default]
    by_name = {t.name: t for t in tasks}
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}; known: {sorted(by_name)}")
    return [by_name[name] for name in names]


def ceilings(clock: Clock, rounds: int, small: bool) -> dict:
    """The copy bandwidth and the cuBLAS rate, each a median over ``rounds``."""
    copies, rates = [], []
    for _ in range(rounds):
        copies.append(copy_bandwidth(clock, small))
        rates.append(matmul_rate(clock, small))
    if clock.device == "cuda":
        torch.cuda.empty_cache()
    return {
        "copy_bytes_per_s": statistics.median(copies),
        "matmul_flops": statistics.median(rates),
        "copy_bytes_per_s_rounds": copies,
        "matmul_flops_rounds": rates,
    }


def float32(inputs: tuple) -> tuple:
    """The inputs with floating tensors in float32 (for the reference)."""
    return tuple(t.float() if torch.is_tensor(t) and t.is_floating_point() else t for t in inputs)


def run_task(task: Task, clock: Clock, args: argparse.Namespace, rounds: int):
    """Check, first-call and time the three implementations of ``task``."""
    torch.manual_seed(0)
    inputs = task.make(SMOKE, clock.device)
    expected = task.reference(*float32(inputs))
    found = ours.find(task, allow_standin=not args.no_standin)
    functions = {"triton": task.triton, "torch": task.torch, "ours": found.call}
    sources = {"triton": "baselines." + task.name, "torch": "torch", "ours": found.source}
    results: dict[str, Result] = {}
    # Ours last: a fault in generated code (a sticky CUDA error) must not
    # take the baselines' numbers of this task with it.
    for name, fn in functions.items():
        if fn is None:
            results[name] = Result(sources[name], failure=found.error or "n/a")
        else:
            results[name] = first_call(
                fn, inputs, expected, TOLERANCE, clock, sources[name], args.first_call_limit
            )
    del expected
    timed = {
        name: (lambda fn=functions[name]: fn(*inputs))
        for name, result in results.items()
        if result.valid
    }
    times, failures = interleaved_rounds(timed, clock, rounds)
    for name, values in times.items():
        results[name].times_ms = values
    for name, why in failures.items():
        results[name].failure, results[name].times_ms = why, []
    work = task.work(*inputs)
    return report.TaskRecord(task.name, task.title, task.bound, work, results)


def describe(args: argparse.Namespace, clock: Clock, rounds: int) -> dict:
    """What this run was, for the JSON and the table's header."""
    device = "CPU (TRITON_INTERPRET=1)" if SMOKE else torch.cuda.get_device_name()
    cache = "kept (--warm-cache)" if args.warm_cache else "emptied for this run (cold)"
    return {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "rounds": rounds,
        "do_bench_ms": {"warmup": clock.warmup_ms, "rep": clock.rep_ms},
        "compile_caches": cache,
        "first_call": "first call in this process, compile and tuning included; caches " + cache,
        "argv": sys.argv[1:],
    }


def main(argv: list[str]) -> int:
    """Run the chosen tasks; write the tables, JSON and chart."""
    args = parse(argv)
    tasks = all_tasks()
    if args.list:
        print("\n".join(f"{t.name:20} {t.title}" for t in tasks))
        return 0
    if not SMOKE and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: use --smoke for a CPU run under the interpreter")
    chosen = choose(tasks, args.tasks)
    rounds = args.rounds or (2 if args.quick or SMOKE else 5)
    warmup, rep = (5.0, 20.0) if args.quick else (25.0, 100.0)
    clock = Clock("cpu" if SMOKE else "cuda", warmup, rep)
    # The float32 references must be float32, not TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    meta = describe(args, clock, rounds)
    meta["ceilings"] = limits = ceilings(clock, rounds, SMOKE)
    print(f"{meta['device']}; torch {meta['torch']}, triton {meta['triton']}", flush=True)
    print(
        f"ceilings: copy {limits['copy_bytes_per_s'] / 1e9:.0f} GB/s, "
        f"cuBLAS fp16 8192^3 {limits['matmul_flops'] / 1e12:.0f} TFLOP/s",
        flush=True,
    )
    records = []
    for task in chosen:
        print(f"{task.name}: {task.title}", flush=True)
        records.append(run_task(task, clock, args, rounds))
        if clock.device == "cuda":
            torch.cuda.empty_cache()
        write(args, meta, records, final=task is chosen[-1])
    broken = [r.name for r in records if not r.results["triton"].valid]
    if broken:
        print(f"baseline failed or wrong: {', '.join(broken)}", file=sys.stderr)
    return 1 if broken else 0


def write(args: argparse.Namespace, meta: dict, records: list, final: bool) -> None:
    """Write the tables and the JSON (after every task, so that a run stopped by
    a time limit leaves what it measured); at the end print them and draw the chart."""
    limits = meta["ceilings"]
    floors_text, floors = report.floors_table(records, limits)
    text = "\n\n".join(
        [
            f"{meta['device']}; torch {meta['torch']}, triton {meta['triton']}; "
            f"{meta['rounds']} rounds; first calls: {meta['first_call']}",
            report.times_table(records),
            report.throughput_table(records, limits),
            floors_text,
        ]
    )
    out = args.out or Path(os.environ.get("OUT") or "bench-out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.md").write_text(text + "\n")
    report.write_json(out / "bench.json", meta, records, floors)
    if final:
        print("\n" + text, flush=True)
        print(report.write_chart(out / "bench.png", records, meta["device"]))
        print(f"wrote {out / 'bench.md'} and {out / 'bench.json'}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
