"""Hand-written Triton ``conv2d`` by implicit GEMM.

The convolution of an (N, C, H, W) input with a (K, C, R, S) filter is the
matrix product of the (N*P*Q, C*R*S) matrix of input windows with the
(C*R*S, K) filter matrix, into the (N*P*Q, K) output.  Neither matrix is built:
each program computes one (BLOCK_M, BLOCK_N) tile of the output like ``mm``'s
kernel (grouped ordering, float32 accumulation), reading window elements
straight from the input.  The reduction index runs over (c, r, s) in the
filter's own order, so filter tiles are read along their contiguous dimension
(the wrapper makes the filter contiguous); the input is read through its
strides, NCHW or channels-last.  Padding reads zeros through the load mask;
without padding, and with a ``BLOCK_K`` that divides C*R*S, the loop has no
masks at all (rows past the end are wrapped onto valid ones, as in ``mm``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import autotune, config, gemm_configs_that_fit, launch, pair

CONFIGS = [
    # The gathered input tile needs an address per element: BLOCK_K of 32 with
    # 8 warps keeps large tiles out of register spills (ptxas, sm_90).
    config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3),
    config(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=32, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=32, BLOCK_N=32, BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=4),
]

INTERPRET_CONFIG = config(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def _prune(configs: list[triton.Config], args: dict) -> list[triton.Config]:
    """The tilings that fit the (N*P*Q, K) output and the shared memory."""
    rows = args["N"] * args["P"] * args["Q"]
    return gemm_configs_that_fit(configs, rows, args["K"], args["x_ptr"].element_size())


@autotune(
    CONFIGS, INTERPRET_CONFIG, key=["N", "C", "H", "W", "K", "P", "Q", "R", "S"], prune=_prune
)
@triton.heuristics(
    {
        "EVEN_K": lambda args: (args["C"] * args["R"] * args["S"]) % args["BLOCK_K"] == 0,
        "PADDED": lambda args: args["pad_h"] > 0 or args["pad_w"] > 0,
    }
)
@triton.jit
def conv2d_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    N,
    C,
    H,
    W,
    K,
    P,
    Q,
    stride_xn,
    stride_xc,
    stride_xh,
    stride_xw,
    stride_wk,
    stride_yn,
    stride_yk,
    stride_yp,
    stride_yq,
    stride_h,
    stride_w,
    pad_h,
    pad_w,
    R: tl.constexpr,
    S: tl.constexpr,
    EVEN_K: tl.constexpr,
    PADDED: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """One (BLOCK_M output pixels, BLOCK_N output channels) tile of the convolution."""
    pid = tl.program_id(0)
    rows_total = N * P * Q
    tiles_m = tl.cdiv(rows_total, BLOCK_M)
    group_size = GROUP_M * tl.cdiv(K, BLOCK_N)
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    # Output pixel (n, p, q) of each row (wrapped past the end: loads need no
    # row mask) and the top-left corner of its input window.
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    wrapped = rows % rows_total
    n = wrapped // (P * Q)
    top = ((wrapped % (P * Q)) // Q) * stride_h - pad_h
    left = (wrapped % Q) * stride_w - pad_w
    row_offset = n * stride_xn + top * stride_xh + left * stride_xw  # int32: see conv2d()

    channels = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    crs_total = C * R * S
    for k0 in range(0, crs_total, BLOCK_K):
        # The reduction index runs over (c, r, s) like the filter's own layout,
        # so the filter tile is read along its contiguous dimension.
        crs = k0 + ks
        c = crs // (R * S)
        r = (crs % (R * S)) // S
        s = crs % S
        x_ptrs = x_ptr + (
            row_offset[:, None] + (c * stride_xc + r * stride_xh + s * stride_xw)[None, :]
        )
        w_ptrs = w_ptr + (channels % K)[None, :] * stride_wk + crs[:, None]
        mask = (crs < crs_total)[None, :]
        if PADDED:
            ih = top[:, None] + r[None, :]
            iw = left[:, None] + s[None, :]
            mask = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        if EVEN_K and not PADDED:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            a = tl.load(x_ptrs, mask=mask, other=0.0)
            b = tl.load(w_ptrs, mask=(crs < crs_total)[:, None], other=0.0)
        acc = tl.dot(a, b, acc)

    p = (rows % (P * Q)) // Q
    y_ptrs = (
        y_ptr
        + ((rows // (P * Q)).to(tl.int64) * stride_yn + p * stride_yp + (rows % Q) * stride_yq)[
            :, None
        ]
        + channels[None, :] * stride_yk
    )
    tl.store(
        y_ptrs,
        acc.to(y_ptr.dtype.element_ty),
        mask=(rows < rows_total)[:, None] & (channels < K)[None, :],
    )


def conv2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    *,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    config: dict | None = None,
) -> torch.Tensor:
    """``torch.nn.functional.conv2d(input, weight, stride=stride, padding=padding)``
    (no bias, dilation 1, one group) for (N, C, H, W) input and (K, C, R, S) weight."""
    N, C, H, W = input.shape
    K, C_w, R, S = weight.shape
    if C_w != C:
        raise ValueError(f"input has {C} channels, weight expects {C_w}")
    if input.numel() >= 2**31 or weight.numel() >= 2**31:
        raise ValueError("the kernel indexes its input and filter with 32-bit offsets")
    (stride_h, stride_w), (pad_h, pad_w) = pair(stride), pair(padding)
    P = (H + 2 * pad_h - R) // stride_h + 1
    Q = (W + 2 * pad_w - S) // stride_w + 1
    y = torch.empty((N, K, P, Q), dtype=input.dtype, device=input.device)

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(N * P * Q, meta["BLOCK_M"]) * triton.cdiv(K, meta["BLOCK_N"]),)

    # The reduction walks the filter as a (K, C*R*S) matrix: make it one.
    weight = weight.contiguous()
    launch(
        conv2d_kernel,
        grid,
        input,
        weight,
        y,
        N,
        C,
        H,
        W,
        K,
        P,
        Q,
        *input.stride(),
        weight.stride(0),
        *y.stride(),
        stride_h,
        stride_w,
        pad_h,
        pad_w,
        R=R,
        S=S,
        config=config,
    )
    return y


KERNELS = (conv2d_kernel,)
"""The kernels this module launches (for the code metrics)."""
