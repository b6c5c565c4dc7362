"""Every op at the paper's shapes (section 5), every dtype and framework: GPU only.

The reference is torch on the GPU in float32 (float64 would be slow for
4096-cubed products), from the same rounded inputs; the ops run unpinned,
as users call them (``tools/gpu_tests.py`` lets each kernel compile one
configuration).  Under the interpreter these shapes would take hours: skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.base import ON_GPU
from support.library import DTYPES, assert_close, random

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not ON_GPU, reason="the paper's shapes: GPU only"),
]

EPS = 1e-6


def _reference(function: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """``function`` of the arrays as float32 CUDA tensors, back in float64."""
    import torch

    tensors = [torch.from_numpy(np.asarray(a, dtype=np.float32)).cuda() for a in arrays]
    result = function(*tensors)
    return result.double().cpu().numpy()


def _torch_rope(interleaved: bool) -> Callable[..., Any]:
    import torch

    def rope(x, sin, cos):
        sin_, cos_ = sin[None, :, None, :], cos[None, :, None, :]
        if interleaved:
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack((a * cos_ - b * sin_, a * sin_ + b * cos_), -1).flatten(-2)
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos_ - b * sin_, a * sin_ + b * cos_), -1)

    return rope


def cases() -> dict[
    str, tuple[list[tuple[int, ...]], Callable[..., Any], Callable[..., Any], bool]
]:
    """name: (input shapes, call of the op module, torch reference, uses tl.dot)."""
    import torch
    import torch.nn.functional as F

    square = [(4096, 4096)]
    return {
        "add": ([(1 << 24,)] * 2, lambda o, x, y: o.add(x, y), torch.add, False),
        "addmm": (
            square * 3,
            lambda o, i, a, b: o.addmm(i, a, b, beta=0.5, alpha=2.0),
            lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0),
            True,
        ),
        "bmm": ([(4, 2048, 2048)] * 2, lambda o, a, b: o.bmm(a, b), torch.bmm, True),
        "conv2d": (
            [(4, 512, 14, 14), (512, 512, 3, 3)],
            lambda o, x, w: o.conv2d(x, w),
            F.conv2d,
            True,
        ),
        "mm": (square * 2, lambda o, a, b: o.mm(a, b), torch.mm, True),
        "rms_norm": (
            [(4096, 4096), (4096,)],
            lambda o, x, w: o.rms_norm(x, w, eps=EPS),
            lambda x, w: F.rms_norm(x, (4096,), w, EPS),
            False,
        ),
        "rope": (
            [(4, 1024, 48, 64), (1024, 32), (1024, 32)],
            lambda o, x, s, c: o.rotary_position_embedding(x, s, c, interleaved=True),
            _torch_rope(True),
            False,
        ),
        "rope_half": (
            [(4, 1024, 48, 64), (1024, 32), (1024, 32)],
            lambda o, x, s, c: o.rotary_position_embedding(x, s, c, interleaved=False),
            _torch_rope(False),
            False,
        ),
        "sdpa": (
            [(4, 48, 1024, 64)] * 3,
            lambda o, q, k, v: o.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention,
            True,
        ),
        "sdpa_causal": (
            [(4, 48, 1024, 64)] * 3,
            lambda o, q, k, v: o.scaled_dot_product_attention(q, k, v, is_causal=True),
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            True,
        ),
        "silu": ([(1 << 24,)], lambda o, x: o.silu(x), F.silu, False),
        "softmax": (square, lambda o, x: o.softmax(x), lambda x: torch.softmax(x, -1), False),
        "max_pool2d": (
            [(32, 64, 112, 112)],
            lambda o, x: o.max_pool2d(x, 3, stride=2, padding=1),
            lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
            False,
        ),
        "swiglu": (
            [(2048, 14336)] * 2,
            lambda o, a, b: o.swiglu(a, b),
            lambda a, b: a * F.silu(b),
            False,
        ),
        "fused_add_rms_norm": (
            [(4096, 4096), (4096, 4096), (4096,)],
            lambda o, x, r, w: o.fused_add_rms_norm(x, r, w, eps=EPS)[0],
            lambda x, r, w: F.rms_norm(x + r, (4096,), w, EPS),
            False,
        ),
    }


SPLIT = {"conv2d": [6]}
"""The paper's products that split-K serves, with their chunk counts
(:mod:`ninetoothed.library.ops.split`'s rule: 20 tiles of 128 x 128 for
132 processors); the others keep their single kernel."""

NAMES = [
    "add", "addmm", "bmm", "conv2d", "mm", "rms_norm", "rope", "rope_half", "sdpa",
    "sdpa_causal", "silu", "softmax", "max_pool2d", "swiglu", "fused_add_rms_norm",
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_paper_shape(framework, ops, passes, name, dtype):
    shapes, call, reference, matrix = cases()[name]
    arrays = [random(shape, dtype) for shape in shapes]
    result = call(ops, *(framework.from_numpy(a) for a in arrays))
    assert_close(framework.to_numpy(result), _reference(reference, *arrays), dtype, matrix)
    assert passes == SPLIT.get(name, [])
