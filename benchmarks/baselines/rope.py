"""Hand-written Triton rotary position embedding (rope), interleaved or half-split.

The input is (batch, seq_len, heads, head_dim), the sine and cosine tables
(seq_len, head_dim / 2), as in the paper's task.  Each program rotates
``BLOCK_H`` heads of one (batch, position) row: it reads that position's table
row once and the heads' vectors once, contiguously, and writes them once.  The
pairs rotated are ``(x[2i], x[2i + 1])`` when interleaved (split apart and joined
back in registers, so memory is still read in whole rows) and
``(x[i], x[i + head_dim / 2])`` when half-split (two contiguous halves; the
layout of Hugging Face's Llama).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import at_most, autotune, config, launch

CONFIGS = [
    config(BLOCK_H=block_h, num_warps=num_warps)
    for block_h in (2, 4, 8, 16, 32, 64)
    for num_warps in (1, 2, 4)
]

INTERPRET_CONFIG = config(BLOCK_H=2)


def _prune(configs: list[triton.Config], args: dict) -> list[triton.Config]:
    """No head block past the head count, and at least 64 elements per warp."""
    largest = at_most(args["H"], floor=1)
    return [
        c
        for c in configs
        if c.kwargs["BLOCK_H"] <= largest
        and c.num_warps * 64 <= c.kwargs["BLOCK_H"] * 2 * args["HALF"]
    ]


@autotune(CONFIGS, INTERPRET_CONFIG, key=["H", "HALF", "INTERLEAVED"], prune=_prune)
@triton.jit
def rope_kernel(
    x_ptr,
    sin_ptr,
    cos_ptr,
    y_ptr,
    L,
    H,
    stride_xb,
    stride_xl,
    stride_xh,
    stride_yb,
    stride_yl,
    stride_yh,
    stride_sin,
    stride_cos,
    INTERLEAVED: tl.constexpr,
    HALF: tl.constexpr,
    BLOCK_H: tl.constexpr,
):
    """Rotate heads ``[program_id(1) * BLOCK_H, ...)`` of row ``program_id(0)`` (b, l)."""
    row = tl.program_id(0)
    b = (row // L).to(tl.int64)
    pos = row % L
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    i = tl.arange(0, HALF)
    sin = tl.load(sin_ptr + pos * stride_sin + i).to(tl.float32)[None, :]
    cos = tl.load(cos_ptr + pos * stride_cos + i).to(tl.float32)[None, :]
    x_row = x_ptr + b * stride_xb + pos * stride_xl + heads[:, None] * stride_xh
    y_row = y_ptr + b * stride_yb + pos * stride_yl + heads[:, None] * stride_yh
    head_mask = (heads < H)[:, None]
    if INTERLEAVED:
        d = tl.arange(0, 2 * HALF)[None, :]
        x = tl.load(x_row + d, mask=head_mask, other=0.0).to(tl.float32)
        x0, x1 = tl.split(tl.reshape(x, (BLOCK_H, HALF, 2)))
        y = tl.join(x0 * cos - x1 * sin, x0 * sin + x1 * cos)
        y = tl.reshape(y, (BLOCK_H, 2 * HALF))
        tl.store(y_row + d, y.to(y_ptr.dtype.element_ty), mask=head_mask)
    else:
        x0 = tl.load(x_row + i[None, :], mask=head_mask, other=0.0).to(tl.float32)
        x1 = tl.load(x_row + HALF + i[None, :], mask=head_mask, other=0.0).to(tl.float32)
        y0 = x0 * cos - x1 * sin
        y1 = x0 * sin + x1 * cos
        tl.store(y_row + i[None, :], y0.to(y_ptr.dtype.element_ty), mask=head_mask)
        tl.store(y_row + HALF + i[None, :], y1.to(y_ptr.dtype.element_ty), mask=head_mask)


def rope(
    x: torch.Tensor,
    sin: torch.Tensor,
    cos: torch.Tensor,
    interleaved: bool = True,
    *,
    config: dict | None = None,
) -> torch.Tensor:
    """Rotary position embedding of ``x`` (batch, seq_len, heads, head_dim) by the
    tables ``sin`` and ``cos`` (seq_len, head_dim / 2), in a new contiguous tensor.

    ``x`` may have any strides but a unit one on the last dimension (Hugging
    Face's (batch, heads, seq_len, head_dim) tensors pass as ``x.transpose(1, 2)``);
    head_dim must be a power of two.
    """
    B, L, H, D = x.shape
    half = D // 2
    if D != 2 * half or half & (half - 1):
        raise ValueError(f"head_dim must be a power of two, not {D}")
    if sin.shape != (L, half) or cos.shape != (L, half):
        raise ValueError(f"tables must be {(L, half)}, not {tuple(sin.shape)}, {tuple(cos.shape)}")
    if x.stride(-1) != 1:
        x = x.contiguous()
    sin = sin if sin.stride(-1) == 1 else sin.contiguous()
    cos = cos if cos.stride(-1) == 1 else cos.contiguous()
    y = torch.empty((B, L, H, D), dtype=x.dtype, device=x.device)
    launch(
        rope_kernel,
        lambda meta: (B * L, triton.cdiv(H, meta["BLOCK_H"])),
        x,
        sin,
        cos,
        y,
        L,
        H,
        *x.stride()[:3],
        *y.stride()[:3],
        sin.stride(0),
        cos.stride(0),
        INTERLEAVED=bool(interleaved),
        HALF=half,
        config=config,
    )
    return y


KERNELS = (rope_kernel,)
"""The kernels this module launches (for the code metrics)."""
