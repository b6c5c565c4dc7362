"""Several GPUs in one process: kernels alternate between ``cuda:0`` and ``cuda:1``.

Each call launches on its arguments' device and that device's current stream
(a side stream here, behind a long sleep: a launch anywhere else would read
its input before it is written), and tuning results are kept per device
model: two GPUs of one model tune a key once, two models once each.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU"),
    pytest.mark.skipif(ON_GPU and torch.cuda.device_count() < 2, reason="needs two GPUs"),
]


def test_ops_alternate_between_two_gpus_on_their_own_streams(tmp_path):
    # A fresh process: another test's tuning of mm, kept in this one's memory, would
    # leave nothing to count.
    # Several configurations to tune between (the GPU suite pins one per kernel).
    environment = {
        **os.environ,
        "NINETOOTHED_CACHE_DIR": str(tmp_path),
        "NINETOOTHED_MAX_NUM_CONFIGS": "4",
    }
    result = subprocess.run(
        [sys.executable, __file__], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def _alternate() -> None:
    """Alternate mm and silu between the GPUs on side streams; count the tunings."""
    from nt_torch import ops
    from nt_triton.tuner._core import Tuner

    tunings: list[str] = []
    tune = Tuner.tune

    def counted(self, call, ranks=None):  # type: ignore[no-untyped-def]
        tunings.append(self.name)
        return tune(self, call, ranks)

    Tuner.tune = counted  # type: ignore[method-assign]
    torch.cuda.set_device(0)
    for device in ("cuda:1", "cuda:0", "cuda:1", "cuda:0"):
        a = torch.randn(300, 200, device=device, dtype=torch.float16)
        b = torch.randn(200, 100, device=device, dtype=torch.float16)
        side = torch.cuda.Stream(device=device)
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)
            a.mul_(2.0)
            product = ops.mm(a, b)
            activated = ops.silu(a)
        side.synchronize()
        assert product.device == torch.device(device)
        torch.testing.assert_close(product, a @ b, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(activated, torch.nn.functional.silu(a))
    models = {torch.cuda.get_device_name(index) for index in (0, 1)}
    # mm's key tunes once per model (silu's space may hold one configuration: no tuning).
    assert sum("mm" in name for name in tunings) == len(models), tunings


if __name__ == "__main__":
    _alternate()
