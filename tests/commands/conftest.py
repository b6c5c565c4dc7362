"""Running the ``ninetoothed`` command as a user does: a process, in a folder of their files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The user's folder (the command's working directory)."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def write(folder: Path) -> Callable[[str, str], Path]:
    """``write(name, text)``: a file of the user's (dedented) in :func:`folder`."""

    def write(name: str, text: str) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write


@pytest.fixture
def ninetoothed(folder: Path, tmp_path: Path) -> Run:
    """``ninetoothed(*arguments, script=False)``: run ``python -m ninetoothed`` (or the
    installed ``ninetoothed`` script) in :func:`folder`, on a cache of its own, in the
    test run's mode (the interpreter on the CPU, the GPU in a GPU run)."""

    def run(*arguments: str, script: bool = False) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, "NINETOOTHED_CACHE_DIR": str(tmp_path / "cache")}
        if script:
            found = Path(sys.executable).parent / "ninetoothed"
            command = [str(found) if found.exists() else str(shutil.which("ninetoothed"))]
        else:
            command = [sys.executable, "-m", "ninetoothed"]
        return subprocess.run(
            [*command, *arguments],
            capture_output=True,
            text=True,
            env=environment,
            cwd=folder,
            timeout=300,
        )

    return run
