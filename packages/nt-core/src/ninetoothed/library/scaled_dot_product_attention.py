"""``scaled_dot_product_attention``: FlashAttention-2's forward pass.

Each program owns ``BLOCK_SIZE_M`` query rows of one (batch, head) and walks
the keys and values in blocks of ``BLOCK_SIZE_N`` with an online softmax:
the running row maximum, the running sum of exponentials and the float32
output accumulator stay in registers, and the scores never reach memory.  The
softmax works in base 2, the scale folded into the queries.  Key blocks come
in two loops: those that need no mask (wholly inside the sequence, and wholly
at or below the diagonal when causal), then the few that do (the diagonal, a
ragged last block).  Causal masking is aligned top-left, as torch's
``is_causal``.  With grouped-query heads (``gqa``) the keys and values have
fewer heads, each shared by ``heads / kv_heads`` query heads consecutively.
Over no keys the output is zeros, as torch's.
"""

from __future__ import annotations

import functools
from typing import Any

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile

__all__ = [
    "LOG2_E",
    "CONFIGS",
    "MAX_HEAD_DIM",
    "application",
    "application_with_lse",
    "arrangement",
    "arrangement_with_lse",
    "attend",
    "configurations",
    "online_softmax",
    "premake",
]

LOG2_E = 1.4426950408889634

MAX_HEAD_DIM = 256
"""The largest head dimension the op takes (and the default bound of a kernel's)."""
"""The head dimension is a compile-time constant: a query row is one tile row."""


def arrangement(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: Tensor,
    causal: Tensor,
    o: Tensor,
    gqa: bool = False,
    BLOCK_SIZE_M: Symbol = block_size(64, 128),
    BLOCK_SIZE_N: Symbol = block_size(32, 128),
) -> tuple[Tensor, ...]:
    """Query and output blocks per program; every key and value block for each."""

    def arrange_q_or_o(input: Tensor) -> Tensor:
        arranged = input.tile((1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        return arranged

    q_arranged = arrange_q_or_o(q)

    def arrange_k_or_v(input: Tensor) -> Tensor:
        if gqa:  # key/value head h // group for query head h
            group = q.shape[1] // input.shape[1]
            input = input.unsqueeze(2).expand((-1, -1, group, -1, -1)).flatten(1, 3)
        arranged = input.tile((1, 1, BLOCK_SIZE_N, -1)).tile((1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, q_arranged.shape[-2], -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
        return arranged

    return q_arranged, arrange_k_or_v(k), arrange_k_or_v(v), scale, causal, arrange_q_or_o(o)


def arrangement_with_lse(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: Tensor,
    causal: Tensor,
    o: Tensor,
    lse: Tensor,
    gqa: bool = False,
    BLOCK_SIZE_M: Symbol = block_size(64, 128),
    BLOCK_SIZE_N: Symbol = block_size(32, 128),
) -> tuple[Tensor, ...]:
    """:func:`arrangement`, plus the (batch, heads, queries) log-sum-exp ``lse`` in
    blocks of ``BLOCK_SIZE_M`` rows beside the output's."""
    arranged = arrangement(q, k, v, scale, causal, o, gqa, BLOCK_SIZE_M, BLOCK_SIZE_N)
    lse_arranged = lse.unsqueeze(3).tile((1, 1, BLOCK_SIZE_M, 1))
    lse_arranged.dtype = lse_arranged.dtype.squeeze((0, 1, 3))
    return (*arranged, lse_arranged)


def attend(
    q: Tile,
    k: Tile,
    v: Tile,
    qk_scale: Tile,
    acc: Tile,
    l_i: Tile,
    m_i: Tile,
    start: Tile,
    stop: Tile,
    masked: bool,
    causal: Tile,
    rows: Tile,
    length: Tile,
) -> None:
    """Fold key blocks ``start`` to ``stop`` into the online softmax (``acc``, ``l_i``,
    ``m_i``: assigning to them assigns to the caller's) of the scores times
    ``qk_scale``; when ``masked``, keys past ``length`` and, when ``causal``, after
    the query's row get no weight."""
    for i in range(start, stop):
        qk = ntl.dot(q, ntl.trans(k[i])) * qk_scale
        if masked:
            keys = i * k.dtype.shape[0] + ntl.arange(0, k.dtype.shape[0])[None, :]
            keep = keys < length
            if causal:
                keep = keep & (keys <= rows)
            qk = ntl.where(keep, qk, float("-inf"))
        m_ij = ntl.maximum(m_i, ntl.max(qk, 1))
        p = ntl.exp2(qk - m_ij[:, None])
        alpha = ntl.exp2(m_i - m_ij)
        l_i = l_i * alpha + ntl.sum(p, 1)
        acc = ntl.dot(p.to(v.dtype.dtype), v[i], acc * alpha[:, None])
        m_i = m_ij


def online_softmax(
    q: Tile,
    q_block: Tile,
    k: Tile,
    v: Tile,
    scale: Tile,
    causal: Tile,
    acc: Tile,
    l_i: Tile,
    m_i: Tile,
) -> None:
    """Fold every key block the query rows see into ``acc``, ``l_i`` and ``m_i`` (the
    caller's: the helper is inlined); ``q_block`` is ``q`` loaded."""
    qk_scale = scale * LOG2_E
    length = k.source.shape[-2]
    # The query rows' positions, a column: the block's first row plus an arange.
    # The minimum of ``offsets`` is that first row whether ``offsets`` is the
    # tile-shaped index or upstream's 1-D offsets along the dimension.
    rows = ntl.min(q.offsets(-2)) + ntl.arange(0, q.shape[-2])[:, None]
    if causal:
        unmasked = ntl.minimum(length, ntl.min(rows) + 1) // k.dtype.shape[0]
        end = ntl.cdiv(ntl.minimum(length, ntl.max(rows) + 1), k.dtype.shape[0])
    else:
        unmasked = length // k.dtype.shape[0]
        end = ntl.cdiv(length, k.dtype.shape[0])
    attend(q_block, k, v, qk_scale, acc, l_i, m_i, 0, unmasked, False, causal, rows, length)
    attend(q_block, k, v, qk_scale, acc, l_i, m_i, unmasked, end, True, causal, rows, length)


def application(q: Tile, k: Tile, v: Tile, scale: Tile, causal: Tile, o: Tile) -> None:
    """One block of query rows against every key block it sees."""
    q_block = q
    # Shaped like the loaded block: a head dimension that is no power of two is padded.
    acc = ntl.zeros_like(q_block).to(ntl.float32)
    l_i = ntl.zeros((q.shape[-2],), dtype=ntl.float32)
    m_i = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)
    online_softmax(q, q_block, k, v, scale, causal, acc, l_i, m_i)
    o = acc / nonzero(l_i)[:, None]  # noqa: F841


def nonzero(l_i: Tile) -> Tile:
    """The rows' sums of weights, with 1 for a row no key contributed to: its
    accumulator is 0 and its output zeros, as torch's, not the NaN of 0 / 0.  (A
    row with a key has a sum of at least 1: its largest score weighs exp2(0).)"""
    return ntl.where(l_i == 0, 1.0, l_i)


def application_with_lse(
    q: Tile, k: Tile, v: Tile, scale: Tile, causal: Tile, o: Tile, lse: Tile
) -> None:
    """:func:`application`, also writing each row's log-sum-exp of its scores (base 2,
    of the scores scaled by ``scale * log2(e)``), from which the backward
    recomputes the probabilities."""
    q_block = q
    # Shaped like the loaded block: a head dimension that is no power of two is padded.
    acc = ntl.zeros_like(q_block).to(ntl.float32)
    l_i = ntl.zeros((q.shape[-2],), dtype=ntl.float32)
    m_i = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)
    online_softmax(q, q_block, k, v, scale, causal, acc, l_i, m_i)
    total = nonzero(l_i)
    o = acc / total[:, None]  # noqa: F841
    lse = m_i + ntl.log2(total)  # noqa: F841 - -inf where no key: m_i is


CONFIGS: dict[int, tuple[tuple[int, int, int, int, int | None], ...]] = {
    32: (
        (64, 64, 4, 3, 128),
        (64, 128, 4, 3, 128),
        (128, 64, 4, 3, 128),
        (128, 128, 8, 3, 128),
        (64, 32, 4, 3, None),
    ),
    64: (
        (64, 64, 4, 3, 128),
        (128, 128, 8, 3, 128),
        (128, 64, 8, 3, None),
        (64, 64, 4, 3, None),
        (64, 32, 4, 4, None),
        (128, 128, 8, 2, 128),
    ),
    128: (
        (128, 64, 8, 2, 128),
        (64, 64, 4, 3, None),
        (64, 32, 4, 3, 128),
        (128, 64, 8, 3, None),
    ),
    256: ((64, 32, 8, 2, None), (128, 32, 8, 3, None), (128, 32, 8, 4, None)),
}
"""``(BLOCK_SIZE_M, BLOCK_SIZE_N, num_warps, num_stages, maxnreg)`` tuned over, per
power-of-two bound of the head dimension (16 takes 32's), measured on an H100
(every block shape of 64 or 128 query rows and 32 to 128 keys, 4 or 8 warps,
2 to 4 stages, with and without a cap of 128 registers: 72 candidates, timed
at 2 to 8 shapes per bound, causal and not): each list keeps the
configurations that came within 2-4% of the fastest at some measured shape.
The first runs untuned (``NINETOOTHED_TUNING=off``, or a space cut to one) and
fits a float32 program (for heads of 256 it is there for that alone: the two
fastest, 128 x 32 blocks, do not fit float32 tiles).  A short list is a short first call: each
configuration is a compile of a second or two, and the general space's 12
block shapes, each with and without the cap, made 24.  The measurements
(``docs/design.md``, "Attention's configurations") also found the cap's
worth: 128 registers let 128 x 64 blocks of heads of 128 run 2 stages at
the best time of all, where the general space kept only 3 stages.  Heads of 128
no longer try 128 x 128 blocks (8 warps, 3 stages): the slowest of the list to
compile (the longest of a cold first call's parallel compiles), and never the
fastest in a later sweep (0.75-0.98 of the best at 9 shapes, ``docs/design.md``)."""


def configurations(head_bound: int) -> list[dict[str, int]]:
    """``make``'s ``configs`` for heads up to ``head_bound``: :data:`CONFIGS`' list for
    the power of two at or above it (from 32 to :data:`MAX_HEAD_DIM`)."""
    bound = min(1 << (max(head_bound, 32) - 1).bit_length(), MAX_HEAD_DIM)
    entries = CONFIGS[bound]
    configs = []
    for m, n, warps, stages, cap in entries:
        config = {"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "num_warps": warps, "num_stages": stages}
        configs.append(config | ({"maxnreg": cap} if cap else {}))
    return configs


def premake(
    gqa: bool = False, few_queries: bool = False, head_bound: int = MAX_HEAD_DIM, lse: bool = False
) -> Premade:
    """The kernel for query and key/value heads (``gqa``: fewer key/value heads);
    ``few_queries`` (at most 16, as when decoding) takes the smallest query block
    and a fixed configuration, which a growing key cache does not tune again.
    ``head_bound`` bounds the head dimension: the tuning space is sized at it, so a
    kernel for heads of 64 may try the 128 x 128 blocks that heads of 256 cannot.
    ``lse`` adds a float32 (batch, heads, queries) output, the rows' log-sum-exp,
    for the backward (:mod:`~ninetoothed.library.scaled_dot_product_attention_backward`)."""
    head = {"constexpr": True, "upper_bound": head_bound}
    tensors = tuple(Tensor(4, shape_options=(None, None, None, head)) for _ in "qkv")
    tensors += (
        Tensor(0),
        Tensor(0, constexpr=True),
        Tensor(4, shape_options=(None, None, None, head)),
    )
    blocks: dict[str, Any] = {}
    options: dict[str, Any] = {"configs": configurations(head_bound)}
    if few_queries:
        # 16 x 32 blocks: the one configuration that fits a program with the head
        # dimension at its bound (256); 16 x 64 does not (the GPU refused to make it).
        blocks = {"BLOCK_SIZE_M": block_size(16, 16), "BLOCK_SIZE_N": block_size(32, 32)}
        options = {"num_warps": 4, "num_stages": 3}
    if lse:
        tensors += (Tensor(3),)
        arranged = functools.partial(arrangement_with_lse, gqa=gqa, **blocks)
        return Premade(arranged, application_with_lse, tensors, options)
    arranged = functools.partial(arrangement, gqa=gqa, **blocks)
    return Premade(arranged, application, tensors, options)
