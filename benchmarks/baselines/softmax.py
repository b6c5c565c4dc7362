"""Hand-written Triton fused ``softmax`` over the last dimension: one program per
row, the whole row in registers (the Triton tutorial's fused softmax): one read,
max, exp, sum and divide in float32, one write."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import autotune, config, launch

CONFIGS = [config(num_warps=num_warps) for num_warps in (2, 4, 8, 16)]

INTERPRET_CONFIG = config()


def _prune(configs: list[triton.Config], args: dict) -> list[triton.Config]:
    """At least 32 row elements per warp: more warps than that only wait."""
    return [c for c in configs if c.num_warps * 32 <= max(64, args["BLOCK_N"] // 4)]


@autotune(CONFIGS, INTERPRET_CONFIG, key=["n_cols"], prune=_prune)
@triton.jit
def softmax_kernel(
    x_ptr,
    y_ptr,
    n_cols,
    stride_x,
    stride_xc,
    stride_y,
    stride_yc,
    BLOCK_N: tl.constexpr,
):
    """Softmax of row ``program_id(0)``; padding reads ``-inf`` so it adds nothing."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols * stride_xc, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=0))
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * stride_y + cols * stride_yc, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor, dim: int = -1, *, config: dict | None = None) -> torch.Tensor:
    """``torch.softmax(x, dim=-1)`` in a new tensor (only the last dimension;
    any strides for 2-D input)."""
    if dim not in (-1, x.dim() - 1):
        raise ValueError("only the last dimension is supported")
    x2 = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    launch(
        softmax_kernel,
        lambda meta: (n_rows,),
        x2,
        y,
        n_cols,
        *x2.stride(),
        *y.stride(),
        BLOCK_N=triton.next_power_of_2(n_cols),
        config=config,
    )
    return y.view(x.shape)


KERNELS = (softmax_kernel,)
"""The kernels this module launches (for the code metrics)."""
