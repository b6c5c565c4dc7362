"""What a call's tuning key holds (the GPU's fast path, launches stubbed on the CPU).

A constexpr scalar is compiled into the kernel: each value is another kernel
whose best configuration differs (attention with its causal mask wants 64 x 64
blocks, without it 128 x 128, on an H100), so the value is part of the key.
A run-time scalar (a factor, a seed) is not: a value that changes every call
must not re-tune every call.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support.stub_gpu import stubbed_gpu

import ninetoothed
from ninetoothed import Tensor, block_size
from nt_triton import _tuning as tuning
from nt_triton._launch.launcher import FastLauncher
from nt_triton.tuner._core import Tuner

CONFIGURATION = FastLauncher._configuration


def tiles(x, y, z, flag, factor, BLOCK=block_size()):  # noqa: B008 - the DSL idiom
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,)), flag, factor


def scaled_or_summed(x, y, z, flag, factor):
    if flag:
        z = x * factor + y  # noqa: F841
    else:
        z = x + y  # noqa: F841


def test_constexpr_scalars_key_the_tuning_and_run_time_ones_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys: list[tuple[Any, ...]] = []

    def choose(
        self: Tuner, key: tuple[Any, ...], device_name: str, call: Any, group: Any, fit: Any
    ) -> Any:
        keys.append(key)
        return tuning.Configuration({"BLOCK": 16}, 4, 3)

    monkeypatch.setattr(Tuner, "choose", choose)
    tensors = (Tensor(1), Tensor(1), Tensor(1), Tensor(0, constexpr=True), Tensor(0))
    x, y, z = (torch.randn(40) for _ in range(3))
    with stubbed_gpu() as launches:
        # The stub skips tuning; put the real choice back, the tuner recording keys.
        # Assigned, not monkeypatched: the stub restores its own saved original on
        # exit, where monkeypatch would put the stub's back after the test.
        FastLauncher._configuration = CONFIGURATION  # type: ignore[method-assign]
        kernel = ninetoothed.make(tiles, scaled_or_summed, tensors)
        for flag, factor in ((True, 2.0), (True, 3.0), (False, 2.0), (False, 5.0)):
            kernel(x, y, z, flag, factor)
    assert len(launches) == 4
    assert len(keys) == 2, keys  # one plan per flag value; factors share it
    assert keys[0] != keys[1], "the two flag values tuned under one key"
    assert all("factor" not in str(key) for key in keys)
    assert FastLauncher._configuration is CONFIGURATION  # nothing left patched
