"""Run upstream NineToothed's ahead-of-time tests, unchanged, against this package.

    python3 tools/upstream_aot_tests.py extract DIR [--mirror REPO]   # where the mirror is
    python3 tools/upstream_aot_tests.py run DIR [PYTEST ARGS...]       # on a GPU machine

``extract`` copies upstream's ``tests/test_aot.py`` and
``tests/test_aot_auto_tuning.py`` with what they import from upstream's
``tests`` package (``__init__``, ``conftest``, ``utils``, ``test_addmm``,
``test_attention``, ``test_conv2d``, ``test_matmul``), from the upstream
repository (a bare git mirror, read with ``git show``), into ``DIR/tests``;
nothing of upstream's is committed here.  ``run`` runs pytest on them in
``DIR`` with this checkout's packages (they must be installed, with torch and
a GPU).  The tests reach ``ninetoothed.make(..., caller=..., kernel_name=...,
output_dir=ninetoothed.generation.CACHE_DIR)``, ``ninetoothed.build``,
``ninetoothed.generation.CACHE_DIR``, ``ninetoothed.Tensor``, the dtype
constants, ``ninetoothed.language``, ``ninetoothed.block_size``, and
``ninetoothed.aot._overflow_terms`` (upstream's private helper: that one
test fails here by design).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

MIRROR = Path("/work/.mirror/InfiniTensor+ninetoothed/repo")
FILES = (
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/utils.py",
    "tests/test_aot.py",
    "tests/test_aot_auto_tuning.py",
    "tests/test_addmm.py",
    "tests/test_attention.py",
    "tests/test_conv2d.py",
    "tests/test_matmul.py",
)
"""Upstream's two ahead-of-time test modules and what they import."""


def extract(directory: Path, mirror: Path) -> None:
    """Write upstream's files into ``directory`` (``git show HEAD:<path>`` each)."""
    for name in FILES:
        text = subprocess.run(
            ["git", "-C", str(mirror), "show", f"HEAD:{name}"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    print(f"wrote {len(FILES)} files of upstream's into {directory / 'tests'}")


def run(directory: Path, arguments: list[str]) -> int:
    """pytest on the extracted tests, on the GPU, in ``directory``."""
    directory = directory.resolve()  # PYTHONPATH must not depend on the working directory
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(directory), *filter(None, [environment.get("PYTHONPATH")])]
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-v",
               "tests/test_aot.py", "tests/test_aot_auto_tuning.py", *arguments]  # fmt: skip
    return subprocess.run(command, cwd=directory, env=environment, check=False).returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    extracting = commands.add_parser("extract", help="copy upstream's tests into DIR")
    extracting.add_argument("directory", type=Path)
    extracting.add_argument("--mirror", type=Path, default=MIRROR)
    running = commands.add_parser("run", help="run them with pytest")
    running.add_argument("directory", type=Path)
    known, rest = parser.parse_known_args(argv)
    if known.command == "extract":
        extract(known.directory, known.mirror)
        return 0
    return run(known.directory, rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
