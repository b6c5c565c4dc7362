"""Hand-written Triton scaled dot-product attention: FlashAttention-2's forward pass.

Each program owns ``BLOCK_M`` query rows of one (batch, head) and streams the
keys and values in blocks of ``BLOCK_N``, keeping the running row maximum, the
running sum of exponentials and the float32 output accumulator in registers
(the online softmax); the scores never reach memory.  As in the Triton
tutorial's fused attention, the softmax works in base 2 (the scale is folded
into ``log2(e) * scale``) and the key blocks are visited in two phases: the
blocks that need no mask (wholly inside the sequence, and wholly at or below
the diagonal when causal), then the few that do (the diagonal, and a ragged
last block).  Any sequence lengths, grouped-query attention (fewer key/value
heads than query heads), causal masking aligned top-left like
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ._common import SHARED_MEMORY_BUDGET, autotune, config, launch

CONFIGS = [
    config(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=3),
    config(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3),
    config(BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3),
    config(BLOCK_M=128, BLOCK_N=32, num_warps=4, num_stages=4),
    config(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3),
    config(BLOCK_M=64, BLOCK_N=128, num_warps=4, num_stages=3),
    # One query row (decoding): the fewest rows a tl.dot takes.
    config(BLOCK_M=16, BLOCK_N=64, num_warps=4, num_stages=3),
    config(BLOCK_M=16, BLOCK_N=128, num_warps=4, num_stages=3),
    config(BLOCK_M=16, BLOCK_N=128, num_warps=8, num_stages=2),
]

INTERPRET_CONFIG = config(BLOCK_M=16, BLOCK_N=16)

LOG2_E = 1.4426950408889634


def _prune(configs: list[triton.Config], args: dict) -> list[triton.Config]:
    """Decoding-sized query blocks for at most 16 queries, others otherwise;
    within the shared-memory budget (the query tile plus the pipelined K and V);
    and at most 64 accumulator values per thread (more spill registers with
    128-wide heads: ptxas, sm_90)."""
    few_queries = args["Lq"] <= 16
    head_dim = args["HEAD_DIM"]
    element = args["q_ptr"].element_size()
    kept = []
    for c in configs:
        block_m, block_n = c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]
        shared = (block_m + 2 * block_n * c.num_stages) * head_dim * element
        accumulator = block_m * head_dim // (32 * c.num_warps)
        if (block_m == 16) == few_queries and shared <= SHARED_MEMORY_BUDGET and accumulator <= 64:
            kept.append(c)
    return kept


@triton.jit
def _attend(
    acc,
    l_i,
    m_i,
    q,
    k_ptrs,
    v_ptrs,
    stride_kn,
    stride_vn,
    start,
    end,
    rows,
    Lk,
    qk_scale,
    MASKED: tl.constexpr,
    IS_CAUSAL: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Fold key/value blocks ``[start, end)`` into the online softmax state."""
    offsets = tl.arange(0, BLOCK_N)
    for block in range(start, end, BLOCK_N):
        cols = block + offsets
        if MASKED:
            k = tl.load(k_ptrs + block * stride_kn, mask=(cols < Lk)[None, :], other=0.0)
            v = tl.load(v_ptrs + block * stride_vn, mask=(cols < Lk)[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs + block * stride_kn)
            v = tl.load(v_ptrs + block * stride_vn)
        scores = tl.dot(q, k) * qk_scale
        if MASKED:
            keep = (cols < Lk)[None, :]
            if IS_CAUSAL:
                keep = keep & (cols[None, :] <= rows[:, None])
            scores = tl.where(keep, scores, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(scores, 1))
        p = tl.math.exp2(scores - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@autotune(
    CONFIGS, INTERPRET_CONFIG, key=["LQ_BUCKET", "LK_BUCKET", "HEAD_DIM", "IS_CAUSAL"], prune=_prune
)
@triton.jit
def sdpa_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    stride_qb,
    stride_qh,
    stride_qm,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_ob,
    stride_oh,
    stride_om,
    H,
    GROUP,
    Lq,
    Lk,
    qk_scale,
    LQ_BUCKET,
    LK_BUCKET,
    HEAD_DIM: tl.constexpr,
    IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Attention of query rows ``[program_id(0) * BLOCK_M, ...)`` of (batch, head)
    ``program_id(1)``; key/value head ``head // GROUP``.  ``LQ_BUCKET`` and
    ``LK_BUCKET`` are only the autotuner's key (lengths rounded up to powers of
    two, so that a growing cache does not tune again at every step)."""
    start_m = tl.program_id(0) * BLOCK_M
    batch = tl.program_id(1) // H
    head = tl.program_id(1) % H
    rows = start_m + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    cols = tl.arange(0, BLOCK_N)

    q_ptrs = q_ptr + batch.to(tl.int64) * stride_qb + head * stride_qh
    q = tl.load(
        q_ptrs + rows[:, None] * stride_qm + dims[None, :], mask=(rows < Lq)[:, None], other=0.0
    )
    kv_head = head // GROUP
    k_ptrs = k_ptr + batch.to(tl.int64) * stride_kb + kv_head * stride_kh
    k_ptrs += dims[:, None] + cols[None, :] * stride_kn  # (HEAD_DIM, BLOCK_N): K transposed
    v_ptrs = v_ptr + batch.to(tl.int64) * stride_vb + kv_head * stride_vh
    v_ptrs += cols[:, None] * stride_vn + dims[None, :]

    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if IS_CAUSAL:
        # Keys up to the block's last row; none masked below its first row.
        end = tl.minimum(Lk, start_m + BLOCK_M)
        unmasked_end = (tl.minimum(Lk, start_m + 1) // BLOCK_N) * BLOCK_N
    else:
        end = Lk
        unmasked_end = (Lk // BLOCK_N) * BLOCK_N
    acc, l_i, m_i = _attend(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, 0, unmasked_end, rows, Lk,
        qk_scale, False, IS_CAUSAL, BLOCK_N,
    )  # fmt: skip
    acc, l_i, m_i = _attend(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, unmasked_end, end, rows, Lk,
        qk_scale, True, IS_CAUSAL, BLOCK_N,
    )  # fmt: skip

    o_ptrs = o_ptr + batch.to(tl.int64) * stride_ob + head * stride_oh
    o = acc / l_i[:, None]
    tl.store(
        o_ptrs + rows[:, None] * stride_om + dims[None, :],
        o.to(o_ptr.dtype.element_ty),
        mask=(rows < Lq)[:, None],
    )


def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    config: dict | None = None,
) -> torch.Tensor:
    """``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=...,
    scale=...)`` for q (batch, heads, Lq, D) and k, v (batch, kv_heads, Lk, D),
    where kv_heads divides heads (``enable_gqa``); D a power of two from 16 to 256;
    any strides with a unit one on D.  Returns a new contiguous tensor."""
    B, H, Lq, D = q.shape
    H_kv, Lk = k.shape[1], k.shape[2]
    if D < 16 or D > 256 or D & (D - 1):
        raise ValueError(f"head dimension must be a power of two in [16, 256], not {D}")
    if H % H_kv or k.shape != v.shape or k.shape[0] != B or k.shape[3] != D:
        raise ValueError(
            f"shapes do not match: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    o = torch.empty((B, H, Lq, D), dtype=q.dtype, device=q.device)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    launch(
        sdpa_kernel,
        lambda meta: (triton.cdiv(Lq, meta["BLOCK_M"]), B * H),
        q,
        k,
        v,
        o,
        *q.stride()[:3],
        *k.stride()[:3],
        *v.stride()[:3],
        *o.stride()[:3],
        H,
        H // H_kv,
        Lq,
        Lk,
        scale * LOG2_E,
        triton.next_power_of_2(Lq),
        triton.next_power_of_2(Lk),
        HEAD_DIM=D,
        IS_CAUSAL=bool(is_causal),
        config=config,
    )
    return o


KERNELS = (sdpa_kernel, _attend)
"""The kernels this module launches, and the helper they call (for the code metrics)."""
