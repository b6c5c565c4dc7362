"""Inputs and references of the ``scaled_mm`` tests on Hopper (``tests/library/
test_hopper_scaled_mm*.py``)."""

from __future__ import annotations

import torch

from support.base import ON_GPU

DEVICE = "cuda" if ON_GPU else "cpu"
FLOAT8 = torch.float8_e4m3fn


def operands(m, n, k, rowwise, seed=0):
    """``input`` (m, k) row-major and ``mat2`` (k, n) column-major in float8 (about
    unit-scaled), and float32 scales in [0.5, 1.5): one each, or (m, 1) and (1, n)."""
    g = torch.Generator().manual_seed(seed * 7919 + m * 31 + n * 7 + k)
    a = (torch.randn(m, k, generator=g) * 2).to(FLOAT8)
    w = (torch.randn(n, k, generator=g) * 2).to(FLOAT8)
    shapes = ((m, 1), (1, n)) if rowwise else ((), ())
    sa, sb = (torch.rand(s, generator=g) + 0.5 for s in shapes)
    return [t.to(DEVICE) for t in (a, w.t(), sa, sb)]


def expected(a, b, sa, sb):
    a, b = a.double().cpu(), b.double().cpu()
    return (a * sa.double().cpu().reshape(-1, 1)) @ (b * sb.double().cpu().reshape(1, -1))


def close(result, expected, dtype, fast=False):
    """Within the output type's rounding; in float32, within the tensor cores' own sums of
    each step of 128 products (fewer bits than float32's: 7e-5 measured on an H100)."""
    error = torch.linalg.norm(result.double().cpu() - expected) / torch.linalg.norm(expected)
    bound = {torch.float32: 3e-4, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
    if fast:  # the tensor cores' own format over all of k
        bound = max(bound, 1e-2)
    assert error < bound, error


def on_hopper():
    """Whether the Gluon kernel can run here: Gluon for Hopper and a Hopper GPU."""
    from nt_torch import hopper
    from nt_triton import hopper_scaled_mm

    return hopper_scaled_mm.available() and hopper.on_hopper(torch.empty(0, device="cuda"))
