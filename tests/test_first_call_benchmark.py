"""``benchmarks/first_call_tuning.py --compare``: both figures, their ratio and each run's
phases from one command (its runs under ``torchrun`` need GPUs: stand-ins here)."""

from __future__ import annotations

import json
from typing import Any

from support import benchmark_scripts

SCRIPT = benchmark_scripts.BENCHMARKS / "first_call_tuning.py"


def _benchmark() -> Any:
    return benchmark_scripts.load("first_call_tuning")


def _run(ranks: int, seconds: float, same: bool = True) -> dict[str, Any]:
    phase = {"first": 0.3, "last": 0.5, "seconds": 0.2, "count": 1, "longest": 0.2}
    compiled = {"first": 0.3, "last": 2.0, "seconds": 9.0, "count": 12, "longest": 1.2}
    return {
        "ranks": ranks,
        "first_call_seconds": [seconds] * ranks,
        "same_configuration": same,
        "compile_workers": [16 // ranks] * ranks,
        "phases": [{"agree": phase, "worker compile": compiled}] * ranks,
    }


def test_compare_prints_both_medians_their_ratio_and_each_rank_s_phases(
    monkeypatch, capsys, tmp_path
):
    benchmark = _benchmark()
    seconds = {1: iter([2.5, 2.4, 2.6]), 2: iter([2.3, 2.2, 2.45])}
    asked: list[tuple[int, bool]] = []

    def one_run(ranks, jointly, size, timeout, stand_in):
        asked.append((ranks, jointly))
        return _run(ranks, next(seconds[ranks]))

    monkeypatch.setattr(benchmark, "one_run", one_run)
    jsonl = tmp_path / "runs.jsonl"
    assert benchmark.main(["--compare", "--jsonl", str(jsonl)]) == 0
    assert asked == [(1, False), (2, True)] * 3  # alternated
    out = capsys.readouterr().out
    assert "1 rank: median 2.500 s of [2.5, 2.4, 2.6]" in out
    assert "2 ranks together: median 2.300 s of [2.3, 2.2, 2.45]" in out
    assert "2 ranks together / 1 rank: 0.920 (ok)" in out
    assert "rank 1 (2.300 s): before tuning 0.300, agree 0.200, worker compile 12 x, " in out
    assert "longest 1.200, sum 9.000, after tuning 0.300" in out
    assert len([json.loads(line) for line in jsonl.read_text().splitlines()]) == 6


def test_compare_says_slower_and_fails_where_ranks_chose_differently(monkeypatch, capsys):
    benchmark = _benchmark()
    monkeypatch.setattr(
        benchmark, "one_run", lambda ranks, *_: _run(ranks, 2.0 + ranks, same=ranks == 1)
    )
    assert benchmark.main(["--compare", "--rounds", "1"]) == 1
    out = capsys.readouterr().out
    assert "RANKS CHOSE DIFFERENT CONFIGURATIONS" in out
    assert "2 ranks together / 1 rank: 1.333 (SLOWER)" in out


def test_the_stand_in_compares_one_rank_and_two_on_the_cpu(tmp_path):
    """Real compiles in the tuner's workers (for sm_90, on the CPU), two ranks over gloo."""
    import os
    import subprocess
    import sys

    environment = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "NINETOOTHED_TUNING": "on"}
    jsonl = tmp_path / "runs.jsonl"
    command = [sys.executable, str(SCRIPT), "--compare", "--stand-in", "--rounds", "1"]
    done = subprocess.run(
        [*command, "--timeout", "300", "--jsonl", str(jsonl)],
        capture_output=True,
        text=True,
        timeout=700,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 ranks together / 1 rank: " in done.stdout
    one, two = (json.loads(line) for line in jsonl.read_text().splitlines())
    assert one["ranks"] == 1 and two["ranks"] == 2 and two["same_configuration"]
    compiled = [phases["worker compile"]["count"] for phases in two["phases"]]
    assert sum(compiled) == one["phases"][0]["worker compile"]["count"]  # each once
    assert "leaders" in two["phases"][0] and "leaders" not in one["phases"][0]
