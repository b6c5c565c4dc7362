#!/usr/bin/env python3
"""Run a nox session on a machine that has only Python (>= 3.10) and pip.

    python3 dev.py demo          # the demo: kernels checked against torch
    python3 dev.py tests         # the test suite, on the CPU
    python3 dev.py tests -k plugins   # arguments after the session go to it

Uses nox when the running interpreter has it; otherwise installs nox once into
``.bootstrap/`` (git-ignored) with ``pip install --target`` and runs it from
there, touching no other environment.  Then runs ``python -m nox -s SESSION``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
BOOTSTRAP = ROOT / ".bootstrap"
NOX_REQUIREMENT = "nox>=2024.10.9"


def nox_environment() -> dict[str, str]:
    """The environment to run nox in, installing nox into .bootstrap if needed."""
    env = dict(os.environ)
    if importlib.util.find_spec("nox") is not None:
        return env
    if not (BOOTSTRAP / "nox").is_dir():
        print(f"dev.py: installing {NOX_REQUIREMENT} into {BOOTSTRAP}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(BOOTSTRAP)]
            + [NOX_REQUIREMENT],
            check=True,
        )
    # nox, and the virtualenv it starts as a subprocess, import from .bootstrap;
    # the noxfile restores the user's PYTHONPATH for the sessions' own commands.
    outer = env.get("PYTHONPATH", "")
    env["NT_DEV_OUTER_PYTHONPATH"] = outer
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOTSTRAP), outer) if p)
    return env


def main(argv: list[str]) -> int:
    """Run ``nox -s argv[0] -- argv[1:]``; with no arguments, list the sessions."""
    env = nox_environment()
    # Sessions that install nothing (gpu, bench) run in this interpreter's environment.
    env["NT_DEV_PYTHON"] = sys.executable
    command = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py")]
    if not argv:
        command.append("-l")
    else:
        command += ["-s", argv[0]]
        if argv[1:]:
            command += ["--", *argv[1:]]
    return subprocess.run(command, env=env, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as error:
        sys.exit(f"dev.py: {error}")
