"""``benchmarks/decode_configs.py --small``: each form's configuration is checked against
float64, then timed against ``torch.mm`` beside the op; one that computes wrong is
reported and not timed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

torch = pytest.importorskip("torch")
decode_configs = pytest.importorskip("decode_configs")


def test_a_few_rows_may_take_either_form() -> None:
    assert [name for name, *_ in decode_configs.forms(1)] == ["thin", "vector"]
    assert [tallest for _, tallest, _ in decode_configs.forms(3)] == [16, 4]
    assert [name for name, *_ in decode_configs.forms(16)] == ["thin"]


@pytest.mark.interpreter_only
def test_each_form_is_checked_then_timed(capsys: pytest.CaptureFixture[str]) -> None:
    assert decode_configs.main(["--small", "--rounds", "1"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("3x40x24 torch.mm ") and "; ops.mm " in line
    assert "thin (16, 16, 4, 1) " in line and "vector (16, 16, 4, 1) " in line


@pytest.mark.interpreter_only
def test_a_configuration_computing_wrong_is_reported_not_timed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def wrong(*args):  # every kernel leaves its output as it found it (NaN)
        return lambda a, b, c: None

    monkeypatch.setattr(decode_configs, "made", wrong)
    assert decode_configs.main(["--small", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("best first: ")  # torch.mm and the op alone were timed
    assert len(lines) == 3 and all("max error nan" in line for line in lines[1:])
