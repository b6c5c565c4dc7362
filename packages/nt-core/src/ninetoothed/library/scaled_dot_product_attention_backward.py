"""``scaled_dot_product_attention``'s backward: FlashAttention-2's, in three kernels.

The forward (:mod:`~ninetoothed.library.scaled_dot_product_attention` with
``lse=True``) keeps each query row's log-sum-exp ``lse`` (base 2, of the
scores scaled by ``scale * log2(e)``), so the probabilities
``P = exp2(Q·Kᵀ·scale·log2(e) - lse)`` are recomputed block by block and never
reach memory.  With ``dS = P ∘ (dO·Vᵀ - delta)``:

* ``delta`` (:func:`delta_application`): ``delta = rowsum(dO ∘ O)`` per query row,
  in float32;
* ``dk_dv`` (:func:`dk_dv_application`): one program per key block, which walks
  the query blocks and accumulates ``dV += Pᵀ·dO`` and ``dK += dSᵀ·Q`` in
  registers (no atomics: each program owns its rows of ``dK`` and ``dV``);
* ``dq`` (:func:`dq_application`): one program per query block, which walks the
  key blocks and accumulates ``dQ += dS·K``.

Both walks work on the transposed product where that saves a transpose of
``P`` (``dk_dv`` computes ``Pᵀ`` directly).  When causal, blocks wholly above
the diagonal are skipped by the loops' bounds, and only the blocks the
diagonal crosses are masked; a ragged last key block is masked in ``dq``
(its keys' rows are outside ``dK`` in ``dk_dv``), and a ragged last query
block needs no mask: its padded rows load as zeros (``other=0``), so their
``dO`` and ``delta`` are zero and so are their contributions.  With grouped
heads (``gqa``) the keys and values are read per query head, as in the
forward; ``dK`` and ``dV`` come out per query head and the op sums each group.

Each kernel's configurations are chosen for an H100 at the head dimension's
power-of-two bound (:data:`CONFIGS`): every one fits its shared memory
(227 KB) and registers at that bound.
"""

from __future__ import annotations

import functools
from typing import Any

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile

__all__ = [
    "CONFIGS",
    "LOG2_E",
    "PARTS",
    "delta_application",
    "delta_arrangement",
    "dk_dv_application",
    "dk_dv_arrangement",
    "dk_dv_blocks",
    "dq_application",
    "dq_arrangement",
    "dq_blocks",
    "premake",
]

LOG2_E = 1.4426950408889634

PARTS = ("delta", "dk_dv", "dq")
"""The three kernels, in the order the backward runs them."""


def _config(block_m: int, block_n: int, warps: int, stages: int) -> dict[str, int]:
    return {
        "BLOCK_SIZE_M": block_m,
        "BLOCK_SIZE_N": block_n,
        "num_warps": warps,
        "num_stages": stages,
    }


_SMALL = {  # heads up to 64
    "dk_dv": [(32, 128, 4, 3), (64, 128, 8, 3), (64, 64, 4, 3), (32, 64, 4, 3), (128, 128, 8, 2)],
    "dq": [(128, 32, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (64, 32, 4, 3), (128, 128, 8, 2)],
}
CONFIGS: dict[int, dict[str, list[tuple[int, int, int, int]]]] = {
    64: _SMALL,
    128: {
        "dk_dv": [
            (32, 128, 8, 2),
            (64, 128, 8, 2),
            (32, 128, 4, 3),
            (64, 64, 4, 3),
            (32, 64, 4, 3),
        ],
        "dq": [(128, 32, 4, 3), (128, 64, 8, 2), (128, 32, 8, 2), (64, 64, 4, 3), (64, 32, 4, 3)],
    },
    256: {
        "dk_dv": [(32, 64, 8, 2), (16, 64, 8, 2), (32, 32, 4, 2), (16, 32, 4, 2)],
        "dq": [(64, 32, 8, 2), (64, 16, 4, 2), (32, 32, 4, 2), (32, 16, 4, 2)],
    },
}
"""(BLOCK_SIZE_M, BLOCK_SIZE_N, warps, stages) per head bound and kernel.  ``dk_dv``
keeps two float32 (BLOCK_SIZE_N, head) accumulators in registers and streams
(BLOCK_SIZE_M, head) blocks of ``Q`` and ``dO`` through shared memory, one pair
per stage: at heads of 128, 64 x 128 blocks in two stages take 160 KB; ``dq``
is the mirror image.  At 256 only blocks of 64 by 32 or smaller fit."""


def _rows(input: Tensor, block: Symbol) -> Tensor:
    """``(B, H, L, D)`` -> one ``(block, D)`` tile per program of a (batch, head, block);
    a ``(B, H, L)`` row vector -> one ``(block,)`` tile, on the same grid."""
    if input.ndim == 3:
        arranged = input.unsqueeze(3).tile((1, 1, block, 1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        return arranged
    arranged = input.tile((1, 1, block, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1))
    return arranged


def _walk(input: Tensor, block: Symbol, programs: Any, gqa_heads: Any = None) -> Tensor:
    """Every ``block`` of rows of ``input`` in order, for each of ``programs`` programs
    per (batch, head); ``gqa_heads``: the query heads, when ``input`` has fewer
    (each shared by consecutive query heads)."""
    if gqa_heads is not None:
        input = _expand_heads(input, gqa_heads)
    vector = input.ndim == 3
    if vector:
        input = input.unsqueeze(3)
    arranged = input.tile((1, 1, block, -1)).tile((1, 1, -1, -1))
    arranged = arranged.expand((-1, -1, programs, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
    arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1, 3) if vector else (0, 1))
    return arranged


def _expand_heads(input: Tensor, heads: Any) -> Tensor:
    """``(B, H_kv, L, D)`` read as ``(B, heads, L, D)``: query head ``h`` reads key/value
    head ``h // (heads / H_kv)``."""
    group = heads // input.shape[1]
    return input.unsqueeze(2).expand((-1, -1, group, -1, -1)).flatten(1, 3)


def delta_arrangement(
    o: Tensor, do: Tensor, delta: Tensor, BLOCK_SIZE_M: Symbol = block_size(64, 128)
) -> tuple[Tensor, ...]:
    """Blocks of rows of ``O``, ``dO`` and ``delta``."""
    return _rows(o, BLOCK_SIZE_M), _rows(do, BLOCK_SIZE_M), _rows(delta, BLOCK_SIZE_M)


def delta_application(o: Tile, do: Tile, delta: Tile) -> None:
    """``delta = rowsum(dO ∘ O)`` in float32."""
    delta = ntl.sum(ntl.cast(o, ntl.float32) * ntl.cast(do, ntl.float32), 1)  # noqa: F841


def dk_dv_arrangement(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: Tensor,
    causal: Tensor,
    do: Tensor,
    lse: Tensor,
    delta: Tensor,
    dk: Tensor,
    dv: Tensor,
    gqa: bool = False,
    BLOCK_SIZE_M: Symbol = block_size(32, 128),
    BLOCK_SIZE_N: Symbol = block_size(32, 128),
) -> tuple[Tensor, ...]:
    """One program per key block of each query head; every query block for each."""
    if gqa:  # the program's key block, read per query head
        k, v = _expand_heads(k, q.shape[1]), _expand_heads(v, q.shape[1])
    k_arranged, v_arranged = _rows(k, BLOCK_SIZE_N), _rows(v, BLOCK_SIZE_N)
    dk_arranged = _rows(dk, BLOCK_SIZE_N)
    programs = dk_arranged.shape[-2]
    return (
        _walk(q, BLOCK_SIZE_M, programs),
        k_arranged,
        v_arranged,
        scale,
        causal,
        _walk(do, BLOCK_SIZE_M, programs),
        _walk(lse, BLOCK_SIZE_M, programs),
        _walk(delta, BLOCK_SIZE_M, programs),
        dk_arranged,
        _rows(dv, BLOCK_SIZE_N),
    )


def dk_dv_blocks(
    q: Tile,
    k: Tile,
    v: Tile,
    do: Tile,
    lse: Tile,
    delta: Tile,
    dk_acc: Tile,
    dv_acc: Tile,
    start: Tile,
    stop: Tile,
    masked: bool,
    keys: Tile,
    qk_scale: Tile,
) -> None:
    """Fold query blocks ``start`` to ``stop`` into ``dk_acc`` and ``dv_acc`` (the
    caller's); when ``masked``, a query row sees the keys up to its own."""
    for j in range(start, stop):
        q_j = q[j]
        do_j = do[j]
        lse_j = lse[j]
        delta_j = delta[j]
        p_t = ntl.exp2(ntl.dot(k, ntl.trans(q_j)) * qk_scale - ntl.expand_dims(lse_j, 0))
        if masked:
            rows = j * q.dtype.shape[0] + ntl.arange(0, q.dtype.shape[0])[None, :]
            p_t = ntl.where(keys <= rows, p_t, 0.0)
        dv_acc += ntl.dot(p_t.to(do.dtype.dtype), do_j)
        dp_t = ntl.dot(v, ntl.trans(do_j))
        ds_t = p_t * (dp_t - ntl.expand_dims(delta_j, 0))
        dk_acc += ntl.dot(ds_t.to(q.dtype.dtype), q_j)


def dk_dv_application(
    q: Tile,
    k: Tile,
    v: Tile,
    scale: Tile,
    causal: Tile,
    do: Tile,
    lse: Tile,
    delta: Tile,
    dk: Tile,
    dv: Tile,
) -> None:
    """One key block against every query block that sees it."""
    qk_scale = scale * LOG2_E
    first = ntl.min(k.offsets(-2))
    keys = first + ntl.arange(0, k.shape[-2])[:, None]
    count = q.shape[0]
    block_m = q.dtype.shape[0]
    if causal:
        # Query blocks before ``start`` see none of these keys; from ``unmasked`` on,
        # every row sees all of them.
        start = first // block_m
        unmasked = ntl.maximum(
            start, ntl.minimum(count, ntl.cdiv(first + k.shape[-2] - 1, block_m))
        )
    else:
        start = 0
        unmasked = 0
    # The program's key and value blocks, loaded once, before the loops.
    k_block = k
    v_block = v
    # Shaped like the loaded blocks: a head dimension that is no power of two is padded.
    dk_acc = ntl.zeros_like(k_block).to(ntl.float32)
    dv_acc = ntl.zeros_like(v_block).to(ntl.float32)
    dk_dv_blocks(
        q, k_block, v_block, do, lse, delta, dk_acc, dv_acc, start, unmasked, True, keys, qk_scale
    )
    dk_dv_blocks(
        q, k_block, v_block, do, lse, delta, dk_acc, dv_acc, unmasked, count, False, keys, qk_scale
    )
    dk = dk_acc * scale  # noqa: F841
    dv = dv_acc  # noqa: F841


def dq_arrangement(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: Tensor,
    causal: Tensor,
    do: Tensor,
    lse: Tensor,
    delta: Tensor,
    dq: Tensor,
    gqa: bool = False,
    BLOCK_SIZE_M: Symbol = block_size(32, 128),
    BLOCK_SIZE_N: Symbol = block_size(32, 128),
) -> tuple[Tensor, ...]:
    """One program per query block; every key and value block for each."""
    q_arranged = _rows(q, BLOCK_SIZE_M)
    programs = q_arranged.shape[-2]
    heads = q.shape[1] if gqa else None
    return (
        q_arranged,
        _walk(k, BLOCK_SIZE_N, programs, heads),
        _walk(v, BLOCK_SIZE_N, programs, heads),
        scale,
        causal,
        _rows(do, BLOCK_SIZE_M),
        _rows(lse, BLOCK_SIZE_M),
        _rows(delta, BLOCK_SIZE_M),
        _rows(dq, BLOCK_SIZE_M),
    )


def dq_blocks(
    q: Tile,
    k: Tile,
    v: Tile,
    do: Tile,
    lse: Tile,
    delta: Tile,
    dq_acc: Tile,
    start: Tile,
    stop: Tile,
    masked: bool,
    last_key: Tile,
    qk_scale: Tile,
) -> None:
    """Fold key blocks ``start`` to ``stop`` into ``dq_acc`` (the caller's); when
    ``masked``, a row sees only the keys up to its ``last_key``."""
    for i in range(start, stop):
        k_i = k[i]
        p = ntl.exp2(ntl.dot(q, ntl.trans(k_i)) * qk_scale - lse)
        if masked:
            keys = i * k.dtype.shape[0] + ntl.arange(0, k.dtype.shape[0])[None, :]
            p = ntl.where(keys <= last_key, p, 0.0)
        dp = ntl.dot(do, ntl.trans(v[i]))
        ds = p * (dp - delta)
        dq_acc += ntl.dot(ds.to(k.dtype.dtype), k_i)


def dq_application(
    q: Tile,
    k: Tile,
    v: Tile,
    scale: Tile,
    causal: Tile,
    do: Tile,
    lse: Tile,
    delta: Tile,
    dq: Tile,
) -> None:
    """One query block against every key block it sees."""
    qk_scale = scale * LOG2_E
    length = k.source.shape[-2]
    block_n = k.dtype.shape[0]
    rows = ntl.min(q.offsets(-2)) + ntl.arange(0, q.shape[-2])[:, None]
    if causal:
        last_key = ntl.minimum(rows, length - 1)
        unmasked = ntl.minimum(length, ntl.min(rows) + 1) // block_n
        end = ntl.cdiv(ntl.minimum(length, ntl.max(rows) + 1), block_n)
    else:
        last_key = length - 1
        unmasked = length // block_n
        end = ntl.cdiv(length, block_n)
    # The program's rows of every operand, loaded once, before the loops.
    q_block = q
    do_block = do
    dq_acc = ntl.zeros_like(q_block).to(ntl.float32)  # padded like the loaded block
    lse_column = ntl.expand_dims(lse, 1)
    delta_column = ntl.expand_dims(delta, 1)
    dq_blocks(
        q_block,
        k,
        v,
        do_block,
        lse_column,
        delta_column,
        dq_acc,
        0,
        unmasked,
        False,
        last_key,
        qk_scale,
    )
    dq_blocks(
        q_block,
        k,
        v,
        do_block,
        lse_column,
        delta_column,
        dq_acc,
        unmasked,
        end,
        True,
        last_key,
        qk_scale,
    )
    dq = dq_acc * scale  # noqa: F841


def _tensors(kinds: str, head_bound: int) -> tuple[Tensor, ...]:
    """``t``: a (B, H, L, D) tensor; ``r``: a float32 (B, H, L) row vector; ``s``: the
    scale; ``c``: the causal flag (constexpr).  Loads outside a tensor read 0."""
    head = {"constexpr": True, "upper_bound": head_bound}
    made = {
        "t": lambda: Tensor(4, other=0, shape_options=(None, None, None, head)),
        "r": lambda: Tensor(3, other=0),
        "s": lambda: Tensor(0),
        "c": lambda: Tensor(0, constexpr=True),
    }
    return tuple(made[kind]() for kind in kinds)


def premake(part: str, gqa: bool = False, head_bound: int = 256) -> Premade:
    """The ``part`` kernel (one of :data:`PARTS`) for heads up to ``head_bound`` (a power
    of two), with key/value heads shared by query heads when ``gqa``."""
    bound = max(64, head_bound)
    if part == "delta":
        warps = 4 if bound <= 64 else 8
        options: dict[str, Any] = {"configs": [{"BLOCK_SIZE_M": 64, "num_warps": warps}]}
        return Premade(
            delta_arrangement, delta_application, _tensors("ttr", head_bound), options, "sdpa_delta"
        )
    configs = [_config(*c) for c in CONFIGS[bound][part]]
    if part == "dk_dv":
        return Premade(
            functools.partial(dk_dv_arrangement, gqa=gqa),
            dk_dv_application,
            _tensors("tttsctrrtt", head_bound),
            {"configs": configs},
            "sdpa_backward_dk_dv",
        )
    if part == "dq":
        return Premade(
            functools.partial(dq_arrangement, gqa=gqa),
            dq_application,
            _tensors("tttsctrrt", head_bound),
            {"configs": configs},
            "sdpa_backward_dq",
        )
    raise ValueError(f"premake: part must be one of {PARTS}, got {part!r}")
