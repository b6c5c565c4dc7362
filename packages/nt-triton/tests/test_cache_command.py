"""``ninetoothed cache info|clear``, run as a user runs it: a process on a temporary root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KERNEL = """
import ninetoothed
from ninetoothed import Tensor

def application(x, y):
    y = x + 1

ninetoothed.make(lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1)))
from nt_triton.cache import _tables
_tables.write("scaled_kernel_" + "0" * 32, "key", {"configuration": {}})
"""


def run(*arguments: str, root: Path, module: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m ninetoothed ARGUMENTS`` (or the ``ninetoothed`` script) on ``root``."""
    environment = {**os.environ, "NINETOOTHED_CACHE_DIR": str(root),
                   "TRITON_CACHE_DIR": str(root.parent / "triton")}  # fmt: skip
    if module:
        command = [sys.executable, "-m", "ninetoothed", *arguments]
    else:
        script = Path(sys.executable).parent / "ninetoothed"
        command = [str(script) if script.exists() else str(shutil.which("ninetoothed")), *arguments]
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding one kernel's source and index entry, and one tuning table."""
    root = tmp_path / "root"
    script = tmp_path / "kernel.py"  # applications are read from their files
    script.write_text(KERNEL)
    environment = {**os.environ, "NINETOOTHED_CACHE_DIR": str(root)}
    subprocess.run([sys.executable, str(script)], check=True, env=environment, timeout=120)
    return root


def kinds(result: subprocess.CompletedProcess[str]) -> dict[str, tuple[int, int]]:
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    return {entry["kind"]: (entry["files"], entry["bytes"]) for entry in answer["kinds"]}


def test_info_reports_the_root_and_each_kind(root: Path) -> None:
    result = run("cache", "info", "--json", root=root)
    assert json.loads(result.stdout)["root"] == str(root)
    found = kinds(result)
    source = next(root.glob("*.py"))
    assert found["sources"] == (1, source.stat().st_size)
    assert found["index"][0] == 1 and found["tuning"][0] == 1
    assert found["triton"] == (0, 0)
    text = run("cache", "info", root=root, module=False)
    assert text.returncode == 0, text.stderr
    assert f"root: {root}" in text.stdout
    assert f"1 files {source.stat().st_size:>12} bytes" in text.stdout


def test_clear_one_kind_then_all(root: Path) -> None:
    before = kinds(run("cache", "info", "--json", root=root))
    cleared = run("cache", "clear", "--kind", "tuning", root=root)
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.startswith("tuning: removed 1 files")
    after = kinds(run("cache", "info", "--json", root=root))
    assert after["tuning"] == (0, 0)
    assert after["sources"] == before["sources"] and after["index"] == before["index"]
    cleared = run("cache", "clear", root=root)
    assert [line.split(":")[0] for line in cleared.stdout.splitlines()] == [
        "sources", "index", "tuning"
    ]  # fmt: skip
    after = kinds(run("cache", "info", "--json", root=root))
    assert after["sources"] == after["index"] == after["tuning"] == (0, 0)


def test_an_unknown_kind_is_refused(root: Path) -> None:
    result = run("cache", "clear", "--kind", "triton", root=root)
    assert result.returncode == 2
    assert "invalid choice: 'triton'" in result.stderr
    assert kinds(run("cache", "info", "--json", root=root))["sources"][0] == 1


def test_an_unwritable_root_is_named_without_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run("cache", "info", root=blocker / "cache")
    assert result.returncode == 1
    assert "ninetoothed cache info: NINETOOTHED_CACHE_DIR=" in result.stderr
    assert "Traceback" not in result.stderr


def test_building_the_command_line_imports_no_triton() -> None:
    """Every ``ninetoothed`` command asks every plugin for its commands: that stays cheap."""
    script = (
        "import sys\nfrom ninetoothed import cli\ncli.parser()\n"
        "heavy = [m for m in ('triton', 'torch') if m in sys.modules]\nassert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
