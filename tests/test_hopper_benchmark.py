"""``benchmarks/hopper.py --smoke``: every section runs end to end on tiny shapes under
Triton's interpreter (first calls, checks against torch, rounds, the JSON), and a
spent budget skips cases and says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "hopper.py"


def _run(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), "--smoke", "--rounds", "1", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.interpreter_only
def test_every_section_runs_checks_and_times_each_implementation(tmp_path: Path) -> None:
    done = _run("--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "hopper.json").read_text())
    assert [case["section"] for case in report] == (
        ["prefill"] * 2
        + ["decode"] * 2
        + ["fp8"] * 4  # tensor-wise and row-wise scales, each with and without fast sums
        + ["configs"]
        + ["gemm"] * 3
        + ["rows"] * 4
        + ["host"]
    )
    host = report.pop()["rows"]
    for case in ("add (64,)", "sdpa decode 1 x 32/8 heads, 128 keys"):
        row = next(line for line in host if line.startswith(f"| {case} |"))
        assert float(row.rsplit("|", 2)[-2]) > 0, row  # a ratio against torch, in the same run
    for case in report:
        implementations = case["implementations"]
        assert "torch" in implementations and len(implementations) >= 2, case
        for name, result in implementations.items():
            assert result["failure"] is None, (case["shape"], name, result["failure"])
            assert result["error"] < 5e-3 and len(result["times_ms"]) == 1
    configs = next(case for case in report if case["section"] == "configs")
    assert sum(name.startswith("ours, split config") for name in configs["implementations"]) == 4
    assert "S = 2" in report[2]["shape"]  # the rule splits the smoke cache in two
    assert "ours, one kernel" in report[2]["implementations"]
    assert "| gemm |" not in done.stdout and "## gemm" in done.stdout


def test_a_spent_budget_skips_the_cases_and_lists_them() -> None:
    done = _run("--budget", "0", "--sections", "prefill")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skipped past the 0 s budget: prefill (1, 2, 40, 16); prefill (1, 2, 40, 16) causal" in (
        done.stdout
    )


def test_unknown_sections_are_refused() -> None:
    done = _run("--sections", "decode,fp4")
    assert done.returncode == 2 and "--sections: unknown ['fp4']" in done.stderr
