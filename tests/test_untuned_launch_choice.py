"""A GPU call that is not tuned (``NINETOOTHED_TUNING=off``) launches the first configuration
that fits its dtypes: the fast path hands the tuner the call's element size (on the stand-in
GPU of :func:`support.stub_gpu.stubbed_gpu`, launches recorded instead of run).

The kernel is the library's matrix product with a space generated from its block sizes'
bounds, whose first configuration does not fit float32 tiles (the library's own pinned
lists start with one that does: ``tests/library/test_matmul.py``)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support.stub_gpu import stubbed_gpu

import ninetoothed
from ninetoothed.library import mm
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

    a, b, c = (torch.randn(256, 256, dtype=dtype) for _ in range(3))
    premade = mm.premake(2)
    with stubbed_gpu() as launches, monkeypatch.context() as patched:
        product = ninetoothed.make(
            premade.arrangement, premade.application, premade.tensors, max_num_configs=16
        )
        # Undone before the stand-in puts the class back as it found it.
        patched.setattr(FastLauncher, "_configuration", recorded)
        product(a, b, c)
    assert len(launches) == 1
    ((kernel, picked),) = chosen
    tiles = kernel.tuner.sizing.tiles
    first = kernel.tuner.configurations[0]
    assert not tiles(first.kwargs()).fits(4, first.num_warps, first.num_stages)  # the case
    assert tiles(picked.kwargs()).fits(dtype.itemsize, picked.num_warps, picked.num_stages)
    assert (picked == first) == (dtype == torch.float16)
