"""``benchmarks/first_call.py``: fresh caches per run, the cases alternated, the medians against
issue 27's floor (its runs need a GPU: their child programs are stood in here)."""

from __future__ import annotations

import json
import sys
from typing import Any

from support import benchmark_scripts


def _benchmark() -> Any:
    return benchmark_scripts.load("first_call")


CHILD = """
import json, os
inputs = {inputs!r}  # the expression, not run: no GPU here
cache = os.environ["NINETOOTHED_CACHE_DIR"]
print(json.dumps({{"import_s": 0.1, "first_call_s": float(len(os.listdir(cache))),
                  "phases": {{}}, "triton": os.environ["TRITON_CACHE_DIR"],
                  "limit": os.environ.get("NINETOOTHED_MAX_NUM_CONFIGS"),
                  "knob": os.environ.get("NT_PROBE_KNOB"), "call": {call!r}}}))
open(os.path.join(cache, "made"), "w").close()
"""
"""Stands in for the benchmark's child program: what it was run with, as JSON."""


def test_each_run_is_a_fresh_process_on_empty_caches_with_the_real_space(monkeypatch):
    benchmark = _benchmark()
    monkeypatch.setattr(benchmark, "CHILD", CHILD)
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1")
    runs = [benchmark.one_run("mm", sys.executable, {"NT_PROBE_KNOB": "b"}, 60) for _ in range(2)]
    assert [run["first_call_s"] for run in runs] == [0.0, 0.0]  # an empty cache each time
    assert runs[0]["triton"] != runs[1]["triton"]
    assert [run["limit"] for run in runs] == [None, None]  # the tuning space uncut
    assert [run["knob"] for run in runs] == ["b", "b"]
    assert runs[0]["call"] == "ops.mm(*inputs)"


def test_a_run_that_fails_says_why(monkeypatch):
    benchmark = _benchmark()
    monkeypatch.setattr(benchmark, "CHILD", "raise SystemExit('no GPU here') # {inputs} {call}")
    run = benchmark.one_run("sdpa", sys.executable, {}, 60)
    assert run == {"case": "sdpa", "failure": "no GPU here"}


def _run(case: str, seconds: float) -> dict[str, Any]:
    compiled = {"first": 0.7, "last": 2.1, "seconds": 9.5, "count": 10, "longest": 1.3}
    return {
        "case": case,
        "import_s": 0.2,
        "first_call_s": seconds,
        "phases": {"worker compile": compiled, "phase B": {"first": 2.1, "last": 2.2}},
    }


def test_the_cases_alternate_and_each_median_meets_the_floor_or_fails(
    monkeypatch, capsys, tmp_path
):
    benchmark = _benchmark()
    seconds = {"mm": iter([2.0, 2.2, 1.9]), "sdpa": iter([3.4, 2.9, 3.1])}
    order: list[str] = []

    def one_run(case: str, python: str, extra: dict[str, str], timeout: float) -> dict[str, Any]:
        order.append(case)
        return _run(case, next(seconds[case]))

    monkeypatch.setattr(benchmark, "one_run", one_run)
    jsonl = tmp_path / "runs.jsonl"
    assert benchmark.main(["--cases", "mm,sdpa", "--jsonl", str(jsonl)]) == 1  # sdpa over
    assert order == ["mm", "sdpa"] * 3
    out = capsys.readouterr().out
    assert "mm: median 2.00 s of [2.00, 2.20, 1.90] (ok, floor 3 s)" in out
    assert "sdpa: median 3.10 s of [3.40, 2.90, 3.10] (over the floor, floor 3 s)" in out
    assert "worker compile 0.70-2.10 (10 x, longest 1.30, sum 9.5), phase B 2.10-2.20" in out
    assert len([json.loads(line) for line in jsonl.read_text().splitlines()]) == 6
    seconds["mm"] = iter([2.0, 2.2, 1.9])
    assert benchmark.main(["--cases", "mm"]) == 0


def test_a_failed_run_fails_its_case(monkeypatch, capsys):
    benchmark = _benchmark()
    monkeypatch.setattr(benchmark, "one_run", lambda case, *rest: {"case": case, "failure": "x"})
    assert benchmark.main(["--cases", "mm", "--rounds", "1"]) == 1
    assert "mm: FAILED: x" in capsys.readouterr().out
