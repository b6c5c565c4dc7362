"""Hand-written Triton matrix multiplication: the kernel of ``mm``, ``bmm`` and ``addmm``.

The algorithm of the Triton tutorial's matmul: one program per
``(BLOCK_M, BLOCK_N)`` output tile, a loop over K that accumulates ``tl.dot``
products in float32, and *grouped* program ordering: consecutive programs walk
down ``GROUP_M`` rows of tiles before moving right, so the tiles of B they read
are shared in L2.  Rows and columns past the edge are wrapped onto valid ones
for the loads (no masks in the loop but K's, and none when ``BLOCK_K`` divides
K); the store is masked.  ``program_id(1)`` is the batch.  An optional epilogue
computes ``beta * input + alpha * (A @ B)`` for ``addmm``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import autotune, config, gemm_configs_that_fit, launch, tuned_config

CONFIGS = [
    # Large tiles for large problems (the tutorial's fp16 choices for Hopper)...
    config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    config(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=4),
    config(BLOCK_M=256, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=4),
    config(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=4),
    # ... and thin ones for few rows (decoding: M is the batch size).
    config(BLOCK_M=32, BLOCK_N=64, BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=4),
    config(BLOCK_M=16, BLOCK_N=128, BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=3),
    config(BLOCK_M=16, BLOCK_N=32, BLOCK_K=256, GROUP_M=8, num_warps=4, num_stages=3),
]

INTERPRET_CONFIG = config(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def _prune(configs: list[triton.Config], args: dict) -> list[triton.Config]:
    """The tilings that fit the output and the shared memory."""
    return gemm_configs_that_fit(configs, args["M"], args["N"], args["a_ptr"].element_size())


@autotune(CONFIGS, INTERPRET_CONFIG, key=["M", "N", "K", "HAS_INPUT"], prune=_prune)
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    x_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    stride_xb,
    stride_xm,
    stride_xn,
    alpha,
    beta,
    HAS_INPUT: tl.constexpr,
    EVEN_K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """One ``(BLOCK_M, BLOCK_N)`` tile of ``C[b] = A[b] @ B[b]`` (``b = program_id(1)``),
    or of ``beta * X[b] + alpha * A[b] @ B[b]`` when ``HAS_INPUT``."""
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + (rows % M)[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + ks[:, None] * stride_bk + (cols % N)[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=ks[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    mask = (rows < M)[:, None] & (cols < N)[None, :]
    if HAS_INPUT:
        x_ptrs = x_ptr + batch * stride_xb + rows[:, None] * stride_xm + cols[None, :] * stride_xn
        x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
        acc = alpha * acc + beta * x
    c_ptrs = c_ptr + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    input: torch.Tensor | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    config: dict | None = None,
) -> torch.Tensor:
    """``a @ b`` for 3-D ``a`` (batch, M, K) and ``b`` (batch, K, N) of any strides,
    plus ``beta * input`` (3-D, broadcast to the output's shape) scaled by ``alpha``
    when ``input`` is given and ``beta`` is not 0.  Returns a new (batch, M, N)
    tensor of ``a``'s dtype."""
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"cannot multiply {tuple(a.shape)} by {tuple(b.shape)}")
    batch, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((batch, M, N), dtype=a.dtype, device=a.device)
    has_input = input is not None and beta != 0
    x = input.expand(batch, M, N) if has_input else c

    def grid(meta: dict) -> tuple[int, int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), batch)

    launch(
        matmul_kernel,
        grid,
        a,
        b,
        c,
        x,
        M,
        N,
        K,
        *a.stride(),
        *b.stride(),
        *c.stride(),
        *x.stride(),
        float(alpha),
        float(beta),
        HAS_INPUT=has_input,
        config=config,
    )
    return c


def mm(a: torch.Tensor, b: torch.Tensor, *, config: dict | None = None) -> torch.Tensor:
    """``torch.mm(a, b)``: 2-D ``a`` (M, K) times 2-D ``b`` (K, N), any strides."""
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"mm takes 2-D tensors, not {tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a[None], b[None], config=config)[0]


def mm_tuned_config(a: torch.Tensor, b: torch.Tensor) -> dict:
    """The configuration the autotuner picks for ``mm(a, b)`` (tuning first if it
    has not), as ``mm``'s ``config`` argument."""
    mm(a, b)
    return tuned_config(matmul_kernel)


KERNELS = (matmul_kernel,)
"""The kernels this module launches (for the code metrics)."""
