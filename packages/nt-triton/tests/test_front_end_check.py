"""``TritonKernel.check_compiles``: Triton's front end run for a call's own types and
configurations, for launchers that compile after the call (jax-triton under
``jax.jit``).  The front end needs no GPU, so this runs on the CPU too."""

from __future__ import annotations

import pytest

import ninetoothed
from ninetoothed import Tensor, block_size
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton import _gpu_check as gpu_check


def arrangement(x, y, BLOCK=block_size()):  # noqa: B008
    return x.tile((BLOCK,)), y.tile((BLOCK,))


def list_of_tiles(x, y):
    pair = [x for _ in range(2)]
    y = pair[0]  # noqa: F841


def copy(x, y):
    y = x  # noqa: F841


def _call(kernel, dtype="float16"):
    """The generated kernel, one call's tensors and host plan, and configurations' meta."""
    generated = kernel.generated
    tensors = [TensorInfo((1000,), (1,), dtype, "cuda:0", 0) for _ in range(2)]
    plan = generated.prepare(tensors, [None, None], {})
    # Two block sizes, not the kernel's own space: the GPU tests cut that to one.
    return generated, tensors, plan, [{"BLOCK": 64}, {"BLOCK": 128}]


def test_a_rejected_application_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NINETOOTHED_GPU_CHECK", "0")  # else make refuses it at once
    generated, tensors, plan, metas = _call(ninetoothed.make(arrangement, list_of_tiles,
                                                             (Tensor(1), Tensor(1))))  # fmt: skip
    with pytest.raises(LaunchError) as caught:
        generated.check_compiles(tensors, plan, metas)
    message = str(caught.value)
    line = list_of_tiles.__code__.co_firstlineno
    assert f"the application is list_of_tiles at {__file__}:{line}" in message
    assert "pair = [x_tile" in message and "^" in message


def test_each_set_of_types_is_checked_once(monkeypatch, tmp_path):
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    kernel = ninetoothed.make(arrangement, copy, (Tensor(1), Tensor(1)))
    checked = []
    original = gpu_check.check_call
    monkeypatch.setattr(gpu_check, "check_call", lambda f, t: (checked.append(t), original(f, t)))
    generated, tensors, plan, metas = _call(kernel)
    generated.check_compiles(tensors, plan, metas)
    assert len(checked) == len(metas)
    generated.check_compiles(tensors, plan, metas)
    assert len(checked) == len(metas), "checked again"
    generated.check_compiles(*_call(kernel, "float32")[1:])
    assert len(checked) == 2 * len(metas), "another dtype is another check"
    assert {t[0]["x_pointer"] for t in checked} == {"*fp16", "*fp32"}
