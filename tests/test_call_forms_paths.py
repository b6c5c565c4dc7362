"""Upstream's call forms (``tests/upstream/test_call_forms.py``) on the other call paths.

* The GPU's fast path: constexpr symbols given positionally and tensors given
  by their names are put in the adapters' form when the fast path misses,
  then tried on the fast path again: after the first call they launch from
  the plan a keyword call makes, without validating again.  Run with
  :func:`support.stub_gpu.stubbed_gpu` (the GPU's path on CPU tensors,
  launches recorded).
* ``torch.compile``, for a kernel and for one registered with
  ``nt_torch.custom_op`` (whose schema takes symbols by keyword only).
* ``paddle.jit.to_static``, whose translator simulates ``Kernel.__call__``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from support.stub_gpu import stubbed_gpu

import ninetoothed
import nt_torch
from ninetoothed import Symbol, Tensor


def tiles(x, y, z):
    BLOCK = Symbol("BLOCK", constexpr=True)
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def add(x, y, z):
    z = x + y  # noqa: F841


@pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors
def test_upstream_call_forms_launch_from_the_keyword_calls_plan(counted: dict[str, int]) -> None:
    x, y, z = (torch.zeros(1024) for _ in range(3))
    with stubbed_gpu() as launches:
        named = (Tensor(1, name="x"), Tensor(1, name="y"), Tensor(1, name="z"))
        kernel = ninetoothed.make(tiles, add, named)
        kernel(x, y, z, BLOCK=128)  # validated; the fast path is installed
        kernel(x, y, z, BLOCK=128)  # makes the plan
        assert kernel.fast_path is not None
        for call in (
            lambda: kernel(x, y, z, 128),
            lambda: kernel(z, y, x, 128),
            lambda: kernel(x, y, z=z, BLOCK=128),
            lambda: kernel(z=z, y=y, x=x, BLOCK=128),
        ):
            counted.update(bind=0, plan=0)
            launches.clear()
            call()
            assert counted == {"bind": 0, "plan": 0}, "validated again instead of hitting the plan"
            assert len(launches) == 1
        with pytest.raises(ninetoothed.errors.LaunchError, match="got two values for constexpr"):
            kernel(x, y, z, 128, BLOCK=64)


@pytest.mark.interpreter_only  # torch.compile of interpreted kernels
def test_upstream_call_forms_under_torch_compile() -> None:
    kernel = ninetoothed.make(tiles, add, (Tensor(1), Tensor(1), Tensor(1)))
    operator = nt_torch.custom_op("nt_test_call_forms::add", kernel)
    x, y = torch.randn(300), torch.randn(300)
    for launch in (kernel, operator):

        def function(x: torch.Tensor, y: torch.Tensor, launch: Any = launch) -> torch.Tensor:
            z = torch.full_like(x, float("nan"))
            launch(x, y, z, 64)
            return z

        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(function, fullgraph=True)(x, y), x + y)


def test_upstream_call_forms_under_paddle_to_static() -> None:
    paddle = pytest.importorskip("paddle")
    kernel = ninetoothed.make(tiles, add, (Tensor(1), Tensor(1), Tensor(1)))
    x, y = paddle.randn([70]), paddle.randn([70])

    def positional(x: Any, y: Any) -> Any:
        z = paddle.full_like(x, float("nan"))
        kernel(x, y, z, 32)
        return z * 2

    def keyword(x: Any, y: Any) -> Any:
        z = paddle.full_like(x, float("nan"))
        kernel(x, y, z, BLOCK=32)
        return z * 2

    expected = ((x + y) * 2).numpy()
    for block in (positional, keyword):
        np.testing.assert_allclose(block(x, y).numpy(), expected, rtol=1e-6)
        result = paddle.jit.to_static(block)(x, y)
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6)
