"""A GPU call that is not tuned (``NINETOOTHED_TUNING=off``) launches the first configuration
that fits its dtypes: the fast path hands the tuner the call's element size (on the stand-in
GPU of :func:`support.stub_gpu.stubbed_gpu`, launches recorded instead of run)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support.stub_gpu import stubbed_gpu

from nt_torch import ops
from nt_triton import _tuning as tuning
from nt_triton._launch.launcher import FastLauncher

pytestmark = pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_an_untuned_product_launches_a_configuration_its_dtype_fits(monkeypatch, dtype):
    monkeypatch.setenv("NINETOOTHED_TUNING", "off")
    configuration = FastLauncher.__dict__["_configuration"]
    chosen: list[tuple[Any, tuning.Configuration]] = []

    def recorded(self: FastLauncher, call: Any) -> tuning.Configuration:
        result = configuration(self, call)
        chosen.append((self.kernel, result))
        return result

    a, b = (torch.randn(256, 256, dtype=dtype) for _ in range(2))
    with stubbed_gpu() as launches, monkeypatch.context() as patched:
        # Undone before the stand-in puts the class back as it found it.
        patched.setattr(FastLauncher, "_configuration", recorded)
        ops.mm(a, b)
    assert [name for name, _ in launches] == ["mm"]
    ((kernel, picked),) = chosen
    tiles = kernel.tuner.sizing.tiles
    first = kernel.tuner.configurations[0]
    assert not tiles(first.kwargs()).fits(4, first.num_warps, first.num_stages)  # the case
    assert tiles(picked.kwargs()).fits(dtype.itemsize, picked.num_warps, picked.num_stages)
    assert (picked == first) == (dtype == torch.float16)
