"""Hand-written Triton residual add fused with ``rms_norm``: ``rms_norm``'s
kernel adds the residual and writes the sum in the same pass over the row."""

from __future__ import annotations

import torch

from .rms_norm import normalise, rms_norm_kernel


def fused_add_rms_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    config: dict | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``h = x + residual`` and ``rms_norm(h, weight, eps)`` over the last
    dimension; returns ``(normalised, h)``, both new tensors."""
    if residual.shape != x.shape:
        raise ValueError(f"residual {tuple(residual.shape)} differs from x {tuple(x.shape)}")
    y, h = normalise(x, residual, weight, eps, config)
    return y, h


KERNELS = (rms_norm_kernel,)
"""The kernels this module launches (for the code metrics)."""
