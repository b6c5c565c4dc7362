"""The demo (``demo.py``, ``python3 dev.py demo``): what it shows a user, piece by piece.

The whole demo runs every op of the library (minutes under the interpreter);
here its parts are checked: the README's first kernel written and run as the
README says, the two columns that wrap instead of cutting, and the truth
about the configuration under the interpreter.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import demo
import ninetoothed
from ninetoothed import Tensor
from tools import docblocks

ROOT = Path(__file__).resolve().parents[1]

INTERPRETED = demo.Setup("cpu", True, "float32", False)


def test_the_first_kernel_is_the_readme_s(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    readme = docblocks.parse(ROOT / "README.md")
    first_python = next(block for block in readme if block.language == "python")
    assert first_python.marks == {"file": "add.py"}
    assert demo.first_kernel_source() == first_python.code
    assert demo.run_first_kernel(INTERPRETED, tmp_path)
    out = capsys.readouterr().out
    assert (tmp_path / "add.py").read_text() == first_python.code
    assert "  $ TRITON_INTERPRET=1 python add.py\n  True\n" in out
    assert "    kernel = ninetoothed.make(arrangement, application" in out


def test_a_first_kernel_that_goes_wrong_fails_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    wrong = demo.first_kernel_source().replace("z = x + y", "z = x - y")
    monkeypatch.setattr(demo, "first_kernel_source", lambda: wrong)
    assert not demo.run_first_kernel(INTERPRETED, tmp_path)
    assert "did not print True" in capsys.readouterr().err


LEFT = [
    "output_arranged.dtype = output_arranged.dtype.squeeze(leading(batch))",
    "input_arranged = input.tile((*ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_K))",
    "x",
]
RIGHT = [
    "accumulator += tl.dot(input_tile_2, other_tile_5, input_precision='ieee')",
    "a_single_identifier_longer_than_any_column_could_ever_hold_in_one_row_of_it",
]


@pytest.mark.parametrize("width", [40, 60, 80, 200])
def test_side_by_side_wraps_to_the_width_and_loses_nothing(width: int):
    text = demo.side_by_side(LEFT, RIGHT, width)
    rows = text.splitlines()
    assert all(len(row) <= width for row in rows), max(map(len, rows))
    columns = [row.split(" |", 1) for row in rows]
    assert all(len(pair) == 2 for pair in columns), "every row has both columns"
    left = "".join(pair[0] for pair in columns)
    right = "".join(pair[1] for pair in columns)
    squeeze = lambda lines: re.sub(r"\s+", "", "".join(lines))  # noqa: E731
    assert squeeze([left]) == squeeze(LEFT)
    assert squeeze([right]) == squeeze(RIGHT)
    if width >= 200:
        assert len(rows) == len(RIGHT) + 1  # nothing wraps where it fits (the long identifier)


@pytest.mark.interpreter_only
def test_the_configuration_is_called_untuned_under_the_interpreter():
    made = ninetoothed.make(_arrangement, _copy, (Tensor(1), Tensor(1)))
    assert demo.configuration_note(made) == "configuration of the last call: none (not called)"
    x = torch.arange(10.0)
    y = torch.empty_like(x)
    made(x, y)
    note = demo.configuration_note(made)
    assert note.startswith("configuration of the last call: BLOCK_SIZE=")
    assert note.endswith("(interpreter: first configuration, not tuned)")
    assert torch.equal(y, x)


def _arrangement(x, y, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008 (the idiom)
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def _copy(x, y):
    y = x  # noqa: F841
