"""``benchmarks/gemm_configs.py --small``: each configuration is checked against float64,
then timed against ``torch.mm``; one that computes wrong is reported and not timed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

torch = pytest.importorskip("torch")
gemm_configs = pytest.importorskip("gemm_configs")


@pytest.mark.interpreter_only
def test_each_configuration_is_checked_then_timed(capsys: pytest.CaptureFixture[str]) -> None:
    assert gemm_configs.main(["--small", "--rounds", "1"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("40x48x24 torch.mm ")
    # Both variants timed, as ratios, in either order (the faster first).
    assert line.count("(16, 16, 16, 4, 2) 0.") == 2 and "persistent (16, 16, 16, 4, 2)" in line


@pytest.mark.interpreter_only
def test_a_configuration_computing_wrong_is_reported_not_timed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def wrong(*args, **options):  # every kernel leaves its output as it found it (NaN)
        return lambda a, b, c: None

    monkeypatch.setattr(gemm_configs, "made", wrong)
    assert gemm_configs.main(["--small", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("best first: ")  # torch.mm alone was timed
    assert len(lines) == 3 and all("max error nan" in line for line in lines[1:])
