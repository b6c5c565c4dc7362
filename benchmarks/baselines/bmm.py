"""Hand-written Triton ``bmm``: ``mm``'s kernel with the batch on ``program_id(1)``."""

from __future__ import annotations

import torch

from .mm import matmul, matmul_kernel


def bmm(a: torch.Tensor, b: torch.Tensor, *, config: dict | None = None) -> torch.Tensor:
    """``torch.bmm(a, b)``: (batch, M, K) times (batch, K, N), any strides."""
    return matmul(a, b, config=config)


KERNELS = (matmul_kernel,)
"""The kernels this module launches (for the code metrics)."""
