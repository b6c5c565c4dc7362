"""A Python float given for a ``Tensor(0)`` parameter is an ``fp32`` scalar in the kernel.

On a GPU, Triton's launcher passes a Python float as ``fp32``, so ``scale *
x`` computes in ``fp32`` for a half-precision or ``fp8`` tile ``x``.  Under
Triton's interpreter the float used to stay a Python literal, which takes
the tile's type: ``float16`` arithmetic, and ``fp8`` arithmetic that gave 0.
Upstream programs (``addmm`` with ``beta`` and ``alpha``) rely on the GPU's
reading; the interpreter must compute the same.
"""

from __future__ import annotations

import pytest
import torch
from support.base import ON_GPU

import ninetoothed
from ninetoothed import Symbol, Tensor

BLOCK = Symbol("BLOCK", constexpr=True)
DEVICE = "cuda" if ON_GPU else "cpu"


def _arrangement(x, scale, out, BLOCK=BLOCK):
    return x.tile((BLOCK,)), scale, out.tile((BLOCK,))


def _scale(x, scale, out):
    out = scale * x  # noqa: F841


def _divide(x, scale, out):
    out = x / scale  # noqa: F841


DTYPES = [torch.float16, torch.bfloat16]
if hasattr(torch, "float8_e5m2"):
    DTYPES.append(torch.float8_e5m2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("application", [_scale, _divide], ids=["mul", "div"])
def test_float_scalar_computes_in_float32(dtype, application):
    kernel = ninetoothed.make(_arrangement, application, (Tensor(1), Tensor(0), Tensor(1)))
    x = torch.tensor([1.0, 3.0, 5.0, 7.0, -2.0, 0.5, 6.0], device=DEVICE).to(dtype)
    out = torch.full((7,), float("nan"), device=DEVICE)
    kernel(x, 0.7, out, BLOCK=4)
    scale = torch.tensor(0.7, dtype=torch.float32)
    expected = scale * x.float() if application is _scale else x.float() / scale
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=1e-6, atol=0)
