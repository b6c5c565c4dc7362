"""Hand-written Triton ``max_pool2d``: one program per ``BLOCK_SIZE`` output elements.

Each output element takes the maximum of its (R, S) window, the window's loads
unrolled; padding and the window's parts past the edge read ``-inf``.  Windows
of neighbouring outputs overlap or abut, so the input comes from DRAM about
once and the repeats hit the caches.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import autotune, config, launch, pair

CONFIGS = [
    config(BLOCK_SIZE=block_size, num_warps=num_warps)
    for block_size in (256, 512, 1024, 2048)
    for num_warps in (2, 4, 8)
    # 2 to 8 outputs per thread: more spill registers (ptxas, sm_90).
    if 2 <= block_size // (num_warps * 32) <= 8
]

INTERPRET_CONFIG = config(BLOCK_SIZE=64)


@autotune(CONFIGS, INTERPRET_CONFIG, key=["NC", "H", "W", "P", "Q", "R", "S"])
@triton.jit
def max_pool2d_kernel(
    x_ptr,
    y_ptr,
    NC,
    C,
    H,
    W,
    P,
    Q,
    stride_xn,
    stride_xc,
    stride_xh,
    stride_xw,
    stride_h,
    stride_w,
    pad_h,
    pad_w,
    R: tl.constexpr,
    S: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    """Max over the windows of this program's block of the (N*C, P, Q) output."""
    index = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    valid = index < NC * P * Q
    q = index % Q
    p = (index // Q) % P
    nc = index // (P * Q)
    base = x_ptr + (nc // C) * stride_xn + (nc % C) * stride_xc
    top = p * stride_h - pad_h
    left = q * stride_w - pad_w
    result = tl.full((BLOCK_SIZE,), -float("inf"), dtype=tl.float32)
    for r in tl.static_range(R):
        for s in tl.static_range(S):
            ih = top + r
            iw = left + s
            inside = valid & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x = tl.load(base + ih * stride_xh + iw * stride_xw, mask=inside, other=-float("inf"))
            result = tl.maximum(result, x.to(tl.float32))
    tl.store(y_ptr + index, result.to(y_ptr.dtype.element_ty), mask=valid)


def max_pool2d(
    input: torch.Tensor,
    kernel_size: int | tuple[int, int],
    stride: int | tuple[int, int] | None = None,
    padding: int | tuple[int, int] = 0,
    *,
    config: dict | None = None,
) -> torch.Tensor:
    """``torch.nn.functional.max_pool2d(input, kernel_size, stride, padding)`` for
    an (N, C, H, W) input of any strides (dilation 1, floor mode); ``stride``
    defaults to ``kernel_size``.  Returns a new contiguous tensor."""
    N, C, H, W = input.shape
    (R, S) = pair(kernel_size)
    (stride_h, stride_w) = pair(kernel_size if stride is None else stride)
    (pad_h, pad_w) = pair(padding)
    P = (H + 2 * pad_h - R) // stride_h + 1
    Q = (W + 2 * pad_w - S) // stride_w + 1
    y = torch.empty((N, C, P, Q), dtype=input.dtype, device=input.device)
    launch(
        max_pool2d_kernel,
        lambda meta: (triton.cdiv(N * C * P * Q, meta["BLOCK_SIZE"]),),
        input,
        y,
        N * C,
        C,
        H,
        W,
        P,
        Q,
        *input.stride(),
        stride_h,
        stride_w,
        pad_h,
        pad_w,
        R=R,
        S=S,
        config=config,
    )
    return y


KERNELS = (max_pool2d_kernel,)
"""The kernels this module launches (for the code metrics)."""
