"""Hand-written Triton ``addmm``: ``mm``'s kernel with a fused ``beta * input +
alpha * (mat1 @ mat2)`` epilogue (the input is read once, in the tile's store)."""

from __future__ import annotations

import torch

from .mm import matmul, matmul_kernel


def addmm(
    input: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    *,
    beta: float = 1.0,
    alpha: float = 1.0,
    config: dict | None = None,
) -> torch.Tensor:
    """``torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha)``: ``input``
    broadcasts to (M, N); with ``beta == 0`` it is not read (as in torch)."""
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise ValueError(f"addmm takes 2-D matrices, not {tuple(mat1.shape)}, {tuple(mat2.shape)}")
    bias = input.expand(mat1.shape[0], mat2.shape[1])[None]
    return matmul(mat1[None], mat2[None], bias, alpha=alpha, beta=beta, config=config)[0]


KERNELS = (matmul_kernel,)
"""The kernels this module launches (for the code metrics)."""
