"""Run the test suite on a CUDA GPU, in the current environment.

    python3 tools/gpu_tests.py [PYTEST ARGS...]

This is what ``nox -s gpu`` runs; it works without nox too, since GPU machines
may have no network to install it.  It installs nothing: install the packages
first (``pip install --no-deps --no-build-isolation -e packages/nt-core ...``).

Exits with status 1 unless a CUDA GPU is visible.  Then runs pytest with
``NT_TEST_GPU=1``, ``TRITON_INTERPRET`` unset and the ``interpreter_only``
tests deselected; tests of frameworks missing here (paddle, say) skip
themselves, with the reason listed by pytest's ``-rs``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_paths() -> list[str]:
    """The cross-package ``tests/`` folder and every package's own ``tests/``."""
    paths = [ROOT / "tests", *sorted(ROOT.glob("packages/*/tests"))]
    return [str(path.relative_to(ROOT)) for path in paths if path.is_dir()]


def find_gpu() -> str | None:
    """Describe the visible CUDA GPU, or return None (saying why on stderr).

    Asks torch when it is installed (the GPU tests use it), else ``nvidia-smi``.
    """
    try:
        import torch
    except ImportError:
        torch = None

    if torch is not None:
        if not torch.cuda.is_available():
            print(
                f"no CUDA GPU visible to torch {torch.__version__} "
                f"(built for CUDA {torch.version.cuda})",
                file=sys.stderr,
            )
            return None
        return f"{torch.cuda.get_device_name()} (torch {torch.__version__})"

    smi = shutil.which("nvidia-smi")
    if smi is None:
        print(
            "no CUDA GPU found: torch is not installed and nvidia-smi is missing", file=sys.stderr
        )
        return None
    listing = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    if listing.returncode != 0 or not listing.stdout.strip():
        print(f"no CUDA GPU found: nvidia-smi -L said {listing.stderr.strip()!r}", file=sys.stderr)
        return None
    return listing.stdout.strip()


def main(pytest_args: list[str]) -> int:
    """Check for a GPU, then run pytest on it; return pytest's exit status."""
    gpu = find_gpu()
    if gpu is None:
        print("the GPU test run needs a CUDA GPU", file=sys.stderr)
        return 1
    print(f"GPU: {gpu}", flush=True)
    env = dict(os.environ, NT_TEST_GPU="1")
    # Correctness tests compile one configuration per kernel: benchmarking every
    # configuration for every test shape would take minutes and test nothing
    # more.  tests/test_launch_gpu.py lifts the limit: it tunes the real spaces
    # of matmul and attention (a space that hangs or corrupts data fails there).
    env.setdefault("NINETOOTHED_MAX_NUM_CONFIGS", "1")
    env.pop("TRITON_INTERPRET", None)  # compile for the GPU, not interpret
    # JAX takes 75% of GPU memory per process by default: with several pytest
    # workers, all but the first then find no GPU and fall back to the CPU.
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    command = [sys.executable, "-m", "pytest", "-m", "not interpreter_only"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        # A kernel whose compile never ends must fail its test, not stall the run
        # (seen once: an oversized tile; a device lease is short).
        command.append("--timeout=180")
    # Paths among the arguments (tests/library, say) replace the whole suite.
    named = [a for a in pytest_args if not a.startswith("-") and (ROOT / a.split("::")[0]).exists()]
    command += [*([] if named else test_paths()), *pytest_args]
    return subprocess.run(command, env=env, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
