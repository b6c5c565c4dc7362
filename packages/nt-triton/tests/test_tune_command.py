"""``ninetoothed tune export|import``, run as a user runs it: processes on temporary caches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WRITE_TABLE = (
    "from nt_triton.cache import _tables; "
    "_tables.write('scaled_kernel_' + '0' * 32, 'H100|key', {'configuration': {'B': 64}})"
)


def run(*command: str, root: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "NINETOOTHED_CACHE_DIR": str(root)}
    return subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, env=environment, timeout=120
    )


def test_export_then_import_moves_the_results_to_another_cache(tmp_path: Path) -> None:
    here, there, file = tmp_path / "here", tmp_path / "there", tmp_path / "tuning.json"
    assert run("-c", WRITE_TABLE, root=here).returncode == 0
    exported = run("-m", "ninetoothed", "tune", "export", str(file), root=here)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"exported 1 kernels' tuning results to {file}\n"
    assert "scaled_kernel_" + "0" * 32 in json.loads(file.read_text())["kernels"]
    imported = run("-m", "ninetoothed", "tune", "import", str(file), root=there)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == f"imported 1 kernels' tuning results into {there / 'tuning'}\n"
    table = json.loads((there / "tuning" / ("scaled_kernel_" + "0" * 32 + ".json")).read_text())
    assert table["entries"]["H100|key"] == {"configuration": {"B": 64}}


def test_import_refuses_a_file_that_is_not_a_table(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = run("-m", "ninetoothed", "tune", "import", str(bad), root=tmp_path / "root")
    assert result.returncode == 1
    assert result.stderr.startswith("ninetoothed tune import: ")
    assert "not a NineToothed tuning table" in result.stderr
    missing = run("-m", "ninetoothed", "tune", "import", "absent.json", root=tmp_path / "root")
    assert missing.returncode == 1 and "absent.json" in missing.stderr


def test_tune_needs_a_subcommand(tmp_path: Path) -> None:
    result = run("-m", "ninetoothed", "tune", root=tmp_path / "root")
    assert result.returncode == 2
    assert "export" in result.stderr and "import" in result.stderr
