"""Every GEMM variant of the kernel library tunes over its real, pinned space on the GPU.

The rest of the GPU suite cuts each space to its first configuration
(``NINETOOTHED_MAX_NUM_CONFIGS=1``), so a configuration that hangs, crashes or
computes wrong would pass there.  Here a fresh process with cold caches runs
``ops.mm`` through each variant (one program per tile, split-K, thin, vector, persistent)
in float16 and float32 (whose deepest pipelines do not fit shared memory: the tuner
must leave them out, not fail the call), and compares with float64.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")]

CASES = """
import json
import torch
from nt_torch import ops
from ninetoothed.library import mm
from ninetoothed.library.ops import split
from ninetoothed.library.ops.kernels import kernel

# (M, K, N, split count, the kernel's variant)
cases = {
    "one program per tile": (256, 1024, 512, 1, (mm, {"ndim": 2, "persistent": False,
                                                      "tallest": None})),
    "split": (128, 2048, 256, 3, None),
    "thin": (16, 1024, 512, 1, (mm, {"ndim": 2, "persistent": False, "tallest": 16})),
    "vector": (3, 3000, 1000, 1, (mm, {"ndim": 2, "persistent": False, "tallest": 4})),
    "persistent": (2048, 512, 2048, 1, (mm, {"ndim": 2, "persistent": True, "tallest": None})),
}
answer = {}
for dtype in (torch.float16, torch.float32):
    for name, (m, k, n, count, variant) in cases.items():
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = (torch.randn(n, k, device="cuda", dtype=dtype) / k**0.5).t()
        with split.pinned_splits(count):
            result = ops.mm(a, b)
        expected = a.double() @ b.double()
        error = float((result.double() - expected).norm() / expected.norm())
        tried = None
        if variant is not None:
            tried = len(kernel(variant[0], **variant[1]).generated.configurations)
        answer[f"{name} {str(dtype)[6:]}"] = {"error": error, "configurations": tried}
print(json.dumps(answer))
"""


def test_each_gemm_variant_tunes_its_real_space(tmp_path):
    import launch  # benchmarks/launch.py

    caches = {
        "NINETOOTHED_CACHE_DIR": str(tmp_path / "nt"),
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
        "NINETOOTHED_TUNING": "on",
        "NINETOOTHED_MAX_NUM_CONFIGS": "64",
    }
    try:
        answer = launch.python(CASES, caches, timeout=500)
    except subprocess.TimeoutExpired:
        pytest.fail("tuning the GEMM spaces did not finish in 500 s: a configuration hangs")
    print(answer)
    from ninetoothed.library import mm

    assert len(answer) == 10, answer
    for case, found in answer.items():
        # float16 sums of 1,024 or more products in float32; float32 in IEEE or TF32.
        assert found["error"] < 2e-3, (case, found)
    assert answer["one program per tile float16"]["configurations"] == len(mm.CONFIGS)
    assert answer["thin float16"]["configurations"] == len(mm.THIN_CONFIGS)
    assert answer["vector float16"]["configurations"] == len(mm.VECTOR_CONFIGS)
    assert answer["persistent float16"]["configurations"] == len(mm.PERSISTENT_CONFIGS)
