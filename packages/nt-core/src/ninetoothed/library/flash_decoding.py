"""Flash-decoding: attention of a few query rows against a long key/value cache.

When decoding, a step's queries are one token (or a few, speculative decoding's
4 to 16) per head, and the keys a cache of thousands.  FlashAttention-2's
forward (:mod:`~ninetoothed.library.scaled_dot_product_attention`) gives each
(batch, head, block of query rows) one program that walks every key: a batch
of one with 32 heads makes 32 programs for a GPU of 132 processors, each
reading the whole cache.  Flash-decoding splits the keys instead, in two
kernels:

* ``split``: the grid is (batch, head group, split, query block).  Each
  program owns ``heads`` query heads that share one key/value head (grouped-
  query attention packs them: the keys and values are read once for the
  group, and the group's rows fill the rows a ``tl.dot`` needs) and one chunk
  of ``ceil(key blocks / S)`` consecutive key blocks, ``S`` being the
  workspace's split dimension, chosen by the op at run time.  It runs the
  online softmax over its chunk and writes the chunk's normalised output
  (float32, ``(B, H, S, Lq, D)``) and its rows' log-sum-exp (base 2,
  ``(B, H, S, Lq)``; ``-inf`` for a chunk with no key).
* ``merge``: one program per (batch, head, query row) weighs the ``S``
  partial outputs by ``2 ** (lse_s - max lse)`` and divides by the weights'
  sum (the log-sum-exp merge), then rounds once into the output.  A row with
  no key at all gets zeros, as torch's.

No causal mask: torch's ``is_causal`` aligns the mask top-left, so a query
row ``i`` sees keys ``0 … i`` only, and a few query rows never see a long
cache; the op keeps the one-kernel path there (see
:mod:`~ninetoothed.library.ops.attention`).
"""

from __future__ import annotations

import functools
from typing import Any

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.scaled_dot_product_attention import LOG2_E, MAX_HEAD_DIM
from ninetoothed.library.tiling import Premade, Tile

__all__ = [
    "CONFIGS",
    "MAX_SPLITS",
    "PARTS",
    "merge_application",
    "merge_arrangement",
    "premake",
    "split_application",
    "split_arrangement",
]

PARTS = ("split", "merge")
"""The two kernels, in the order they run."""

MAX_SPLITS = 64
"""The most chunks the keys are cut into: the merge holds a row's partials in one
tile of this many rows (masked past ``S``), so ``S`` changing with the cache's
length compiles nothing new."""

CONFIGS: tuple[tuple[int, int, int], ...] = (
    (64, 4, 3),
    (128, 4, 3),
    (64, 4, 4),
    (32, 4, 4),
)
"""``(BLOCK_SIZE_N, num_warps, num_stages)`` of the split kernel.  The op runs the
first: one configuration, so a cache that grows by a token each step is never
tuned again; the others are for the benchmark's comparison
(``benchmarks/hopper.py``)."""


def split_arrangement(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: Tensor,
    o: Tensor,
    lse: Tensor,
    heads: int = 1,
    rows: int = 16,
    BLOCK_SIZE_N: Symbol = block_size(16, 128),
) -> tuple[Tensor, ...]:
    """Per program: ``heads`` query heads x ``rows`` query rows of ``q`` (and the same of
    the partial output ``o`` (B, H, S, Lq, D) and log-sum-exp ``lse`` (B, H, S, Lq)),
    and every ``BLOCK_SIZE_N``-key block of ``k`` and ``v`` (the application walks
    its split's chunk of them)."""
    splits = o.shape[2]

    q_arranged = q.tile((1, heads, rows, -1))  # (B, H / heads, query blocks, 1)
    q_arranged.dtype = q_arranged.dtype.squeeze(0)  # (heads, rows, D)
    q_arranged = q_arranged.squeeze(3).unsqueeze(2).expand((-1, -1, splits, -1))

    def partial(tensor: Tensor) -> Tensor:
        arranged = tensor.tile((1, heads, 1, rows, *([-1] * (tensor.ndim - 4))))
        arranged.dtype = arranged.dtype.squeeze((0, 2))
        return arranged.squeeze(4) if tensor.ndim == 5 else arranged

    def keys(tensor: Tensor) -> Tensor:
        # Query head h reads key/value head h // group: each program's ``heads``
        # heads share one, and ``group / heads`` programs read it.
        programs = q.shape[1] // (heads * tensor.shape[1])
        spread = tensor.unsqueeze(2).expand((-1, -1, programs, -1, -1)).flatten(1, 3)
        blocks = spread.tile((1, 1, BLOCK_SIZE_N, -1)).tile((1, 1, -1, -1))
        blocks.dtype = blocks.dtype.squeeze((0, 1, 3))  # (key blocks,)
        blocks.dtype.dtype = blocks.dtype.dtype.squeeze((0, 1))  # (BLOCK_SIZE_N, D)
        return blocks.expand((-1, -1, splits, q_arranged.shape[3]))

    return q_arranged, keys(k), keys(v), scale, partial(o), partial(lse)


def split_application(q: Tile, k: Tile, v: Tile, scale: Tile, o: Tile, lse: Tile) -> None:
    """The online softmax of the program's query rows over its split's chunk of keys:
    ``ceil(blocks / S)`` consecutive key blocks, the last chunk shorter or empty."""
    q_block = q
    # The heads' rows one after another: (heads x rows, D).  Sizes are read off the
    # loaded (padded) tiles, never assigned to names: Triton keeps them compile-time
    # constants, as reshape and tl.dot need, only so.
    query = ntl.reshape(q_block, (q_block.shape[0] * q_block.shape[1], q_block.shape[2]))
    query = (query * (scale * LOG2_E)).to(q.dtype)
    acc = ntl.zeros_like(query).to(ntl.float32)
    l_i = ntl.zeros((query.shape[0],), dtype=ntl.float32)
    m_i = ntl.full((query.shape[0],), float("-inf"), dtype=ntl.float32)
    length = k.source.shape[-2]
    blocks = ntl.cdiv(length, k.dtype.shape[0])
    chunk = ntl.cdiv(blocks, o.source.shape[2])
    start = ntl.min(o.offsets(2)) * chunk  # the program's split, times the chunk
    for i in range(start, ntl.minimum(start + chunk, blocks)):
        keys = i * k.dtype.shape[0] + ntl.arange(0, k.dtype.shape[0])
        qk = ntl.dot(query, ntl.trans(k[i]))
        qk = ntl.where(keys[None, :] < length, qk, float("-inf"))
        m_ij = ntl.maximum(m_i, ntl.max(qk, 1))
        # A row that has seen no key yet (an empty chunk: S past the key blocks)
        # has a maximum of -inf; shifting by 0 keeps exp2 of -inf at 0.
        shift = ntl.where(m_ij == float("-inf"), 0.0, m_ij)
        p = ntl.exp2(qk - shift[:, None])
        alpha = ntl.exp2(m_i - shift)
        l_i = l_i * alpha + ntl.sum(p, 1)
        acc = ntl.dot(p.to(v.dtype.dtype), v[i], acc * alpha[:, None])
        m_i = m_ij
    total = ntl.where(l_i == 0, 1.0, l_i)  # no key: zeros, and a log-sum-exp of -inf
    o = ntl.reshape(acc / total[:, None], q_block.shape)  # noqa: F841
    lse = ntl.reshape(m_i + ntl.log2(total), (q_block.shape[0], q_block.shape[1]))  # noqa: F841


def merge_arrangement(
    partials: Tensor, lse: Tensor, o: Tensor, SPLITS: int = MAX_SPLITS
) -> tuple[Tensor, ...]:
    """One program per (batch, head, query row): that row's ``S`` partial outputs and
    log-sum-exps, in one tile of ``SPLITS`` rows, and its output row."""
    outputs = partials.tile((1, 1, SPLITS, 1, -1))  # (B, H, 1, Lq, 1)
    outputs.dtype = outputs.dtype.squeeze((0, 1, 3))  # (SPLITS, D)
    weights = lse.tile((1, 1, SPLITS, 1))  # (B, H, 1, Lq)
    weights.dtype = weights.dtype.squeeze((0, 1, 3))  # (SPLITS,)
    merged = o.tile((1, 1, 1, -1))  # (B, H, Lq, 1)
    merged.dtype = merged.dtype.squeeze((0, 1, 2))  # (D,)
    return outputs.squeeze((2, 4)), weights.squeeze(2), merged.squeeze(3)


def merge_application(partials: Tile, lse: Tile, o: Tile) -> None:
    """The log-sum-exp merge of one row's partial outputs (zeros over no key)."""
    top = ntl.max(lse, 0)
    weights = ntl.exp2(lse - ntl.where(top == float("-inf"), 0.0, top))
    total = ntl.sum(weights, 0)
    merged = ntl.sum(weights[:, None] * partials, 0)
    o = merged / ntl.where(total == 0, 1.0, total)  # noqa: F841


def premake(
    part: str, heads: int = 1, rows: int = 16, head_bound: int = MAX_HEAD_DIM, config: int = 0
) -> Premade:
    """The ``part`` kernel (one of :data:`PARTS`) for heads of at most ``head_bound``
    (a power of two); the split kernel packs ``heads`` query heads of ``rows`` rows
    per program and runs ``CONFIGS[config]``."""
    head = {"constexpr": True, "upper_bound": head_bound}
    if part == "merge":
        merged: tuple[Tensor, ...] = (
            Tensor(5, shape_options=(None,) * 4 + (head,)),
            Tensor(4, other=float("-inf")),
            Tensor(4, shape_options=(None,) * 3 + (head,)),
        )
        return Premade(merge_arrangement, merge_application, merged, {}, "flash_decoding_merge")
    if part != "split":
        raise ValueError(f"premake: part must be one of {PARTS}, got {part!r}")
    block, warps, stages = CONFIGS[config]
    options: dict[str, Any] = {
        "configs": [{"BLOCK_SIZE_N": block, "num_warps": warps, "num_stages": stages}]
    }
    qkv = (Tensor(4, shape_options=(None, None, None, head)) for _ in "qkv")
    tensors = (*qkv, Tensor(0), Tensor(5, shape_options=(None,) * 4 + (head,)), Tensor(4))
    arranged = functools.partial(split_arrangement, heads=heads, rows=rows)
    return Premade(arranged, split_application, tensors, options, "flash_decoding_split")
