"""The fast path through Triton's real launcher C code, against a stand-in libcuda (no GPU).

``tools/fakecuda/check_fastpath.py`` makes kernels with ``ninetoothed.make``,
tunes one for real (worker processes compile the space for sm_90), and checks
that every launch — on a miss and on the hot path, for the three ways block
sizes arrive, a float scalar and a matmul — reaches ``cuLaunchKernelEx`` with
the grid, stream and parameters the kernel expects.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# The stand-in libcuda replaces the GPU: on a GPU machine the real driver is
# loaded beside it and the process crashes; the GPU suite launches for real.
@pytest.mark.interpreter_only
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the stand-in libcuda")
@pytest.mark.skipif(not sysconfig.get_paths().get("include"), reason="needs Python's headers")
def test_fast_path_launches_what_the_kernel_expects(tmp_path):
    environment = dict(os.environ, NINETOOTHED_CACHE_DIR=str(tmp_path))
    environment.pop("TRITON_INTERPRET", None)
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "fakecuda" / "check_fastpath.py")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("  ok  ") == 18, result.stdout
