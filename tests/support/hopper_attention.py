"""Inputs and references of the attention tests on Hopper (``tests/library/
test_hopper_attention*.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from support.base import ON_GPU
from support.library import attention

DEVICE = "cuda" if ON_GPU else "cpu"


def qkv(b: int, h: int, lq: int, lk: int, d: int = 128, h_kv: int | None = None,
        dtype: Any = None) -> list[Any]:  # fmt: skip
    """Query (b, h, lq, d), key and value (b, h_kv or h, lk, d), random (seeded by the
    lengths), float16 unless ``dtype`` says otherwise, on the tests' device."""
    import torch

    g = torch.Generator().manual_seed(lq * 31 + lk)
    shapes = [(b, h, lq, d), (b, h_kv or h, lk, d), (b, h_kv or h, lk, d)]
    kind = torch.float16 if dtype is None else dtype
    return [torch.randn(s, generator=g).to(kind).to(DEVICE) for s in shapes]


def expected(q: Any, k: Any, v: Any, causal: bool, scale: float | None = None) -> Any:
    """Attention of ``q``, ``k``, ``v`` in float64 on the CPU (numpy)."""
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    return attention(*(t.float().cpu().numpy() for t in (q, k, v)), causal, scale)


def close(result: Any, wanted: Any, dtype: Any = None) -> None:
    """``result`` within float16's rounding of ``wanted`` (bfloat16's, for bfloat16)."""
    import torch

    error = np.linalg.norm(result.double().cpu().numpy() - wanted) / np.linalg.norm(wanted)
    assert error < (2e-2 if dtype == torch.bfloat16 else 4e-3), error
