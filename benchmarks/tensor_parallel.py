"""A tensor-parallel Llama block built from ``nt_torch.ops`` (or torch's own ops).

One decoder layer: RMSNorm, attention with rotary embeddings (grouped-query,
causal), a residual; RMSNorm, the SwiGLU MLP, a residual.  Over ``world``
ranks the projections are sharded the Megatron way: the query, key, value,
gate and up projections column-wise (each rank holds ``heads / world``
heads and ``ffn / world`` hidden units), the output and down projections
row-wise, each followed by one all-reduce of the partial sums.  Everything
else is computed whole on every rank.  With ``world == 1`` it is the
single-GPU block, no collective made.

The all-reduces go through ``torch.distributed``'s functional collectives,
which ``torch.compile`` traces; their gradients are Megatron's pair: the
input of a column-parallel projection is copied to every rank (its gradient
all-reduced), the sum of a row-parallel one is all-reduced (its gradient
passed as it is).

Used by ``tests/test_tensor_parallel.py`` (equality with one rank, eager and
compiled) and by :mod:`tensor_parallel_bench` (tokens/s against torch's ops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

EPS = 1e-5


@dataclass(frozen=True)
class Shape:
    """The block's dimensions (``heads`` and ``kv_heads`` and ``ffn`` divisible by the ranks)."""

    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    ffn: int = 128


def ours() -> SimpleNamespace:
    """The block's operations from ``nt_torch.ops``."""
    from nt_torch import ops

    return SimpleNamespace(
        name="ninetoothed",
        mm=ops.mm,
        rms_norm=ops.rms_norm,
        rope=lambda x, sin, cos: ops.rotary_position_embedding(x, sin, cos, interleaved=False),
        sdpa=lambda q, k, v: ops.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=k.shape[1] != q.shape[1]
        ),
        silu=ops.silu,
    )


def _torch_rope(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """Half-split rotary embedding of ``x`` (B, L, H, D) by (L, D / 2) tables."""
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    sin, cos = sin[:, None, :], cos[:, None, :]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


def torch_ops() -> SimpleNamespace:
    """The same operations from torch (the benchmark's baseline)."""
    return SimpleNamespace(
        name="torch",
        mm=torch.mm,
        rms_norm=lambda x, weight, eps: F.rms_norm(x, x.shape[-1:], weight, eps),
        rope=_torch_rope,
        sdpa=lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=k.shape[1] != q.shape[1]
        ),
        silu=F.silu,
    )


class _CopyToRanks(torch.autograd.Function):
    """Identity forward; the gradient summed over the ranks (a column-parallel input)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return _all_reduce(grad)


class _ReduceFromRanks(torch.autograd.Function):
    """The partial sums of a row-parallel projection summed over the ranks; the gradient
    passed as it is (every rank holds the whole sum)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _all_reduce(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


def _all_reduce(x: torch.Tensor) -> torch.Tensor:
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    return funcol.wait_tensor(funcol.all_reduce(x.contiguous(), "sum", dist.group.WORLD))


class LlamaBlock(nn.Module):
    """One Llama decoder layer, this rank's shard of it (``world == 1``: all of it)."""

    def __init__(self, shape: Shape, ops: SimpleNamespace, world: int = 1) -> None:
        super().__init__()
        for name, count in (
            ("heads", shape.heads),
            ("kv_heads", shape.kv_heads),
            ("ffn", shape.ffn),
        ):
            if count % world:
                raise ValueError(f"{name}={count} must be divisible by the world size {world}")
        self.shape, self.ops, self.world = shape, ops, world
        self.heads, self.kv_heads = shape.heads // world, shape.kv_heads // world
        width, kv_width, ffn = (
            self.heads * shape.head_dim,
            self.kv_heads * shape.head_dim,
            shape.ffn // world,
        )
        hidden = shape.hidden
        self.attn_norm = nn.Parameter(torch.ones(hidden))
        self.wq = nn.Parameter(torch.empty(width, hidden))
        self.wk = nn.Parameter(torch.empty(kv_width, hidden))
        self.wv = nn.Parameter(torch.empty(kv_width, hidden))
        self.wo = nn.Parameter(torch.empty(hidden, width))
        self.mlp_norm = nn.Parameter(torch.ones(hidden))
        self.w_gate = nn.Parameter(torch.empty(ffn, hidden))
        self.w_up = nn.Parameter(torch.empty(ffn, hidden))
        self.w_down = nn.Parameter(torch.empty(hidden, ffn))

    def _linear(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        y = self.ops.mm(x.reshape(-1, x.shape[-1]), weight.t())
        return y.view(*x.shape[:-1], weight.shape[0])

    def _copy(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.world == 1 else _CopyToRanks.apply(x)

    def _reduce(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.world == 1 else _ReduceFromRanks.apply(x)

    def forward(self, x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
        """``x`` (batch, length, hidden); rotary tables (length, head_dim / 2)."""
        batch, length, _ = x.shape
        dim, ops = self.shape.head_dim, self.ops
        h = self._copy(ops.rms_norm(x, self.attn_norm, EPS))
        q = self._linear(h, self.wq).view(batch, length, self.heads, dim)
        k = self._linear(h, self.wk).view(batch, length, self.kv_heads, dim)
        v = self._linear(h, self.wv).view(batch, length, self.kv_heads, dim)
        q, k = ops.rope(q, sin, cos), ops.rope(k, sin, cos)
        a = ops.sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        a = a.transpose(1, 2).reshape(batch, length, self.heads * dim)
        x = x + self._reduce(self._linear(a, self.wo))
        h = self._copy(ops.rms_norm(x, self.mlp_norm, EPS))
        m = ops.silu(self._linear(h, self.w_gate)) * self._linear(h, self.w_up)
        return x + self._reduce(self._linear(m, self.w_down))


COLUMNS = ("wq", "wk", "wv", "w_gate", "w_up")
"""Projections sharded by output rows (column-parallel)."""
ROWS = ("wo", "w_down")
"""Projections sharded by input columns (row-parallel)."""


def full_weights(
    shape: Shape, dtype: torch.dtype, device: Any, seed: int = 0
) -> dict[str, torch.Tensor]:
    """Random weights of the whole block (the same on every rank for a seed)."""
    block = LlamaBlock(shape, SimpleNamespace())
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name, parameter in block.named_parameters():
        scale = 1.0 if parameter.dim() == 1 else 1 / math.sqrt(parameter.shape[1])
        value = (
            1 + 0.1 * torch.randn(parameter.shape, generator=generator)
            if parameter.dim() == 1
            else scale * torch.randn(parameter.shape, generator=generator)
        )
        weights[name] = value.to(dtype=dtype, device=device)
    return weights


def shard(name: str, weight: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    """Rank ``rank``'s part of the whole block's weight ``name``.

    Heads stay whole: query rows are ``heads * head_dim`` in head order, so an
    even split of the rows gives each rank whole heads (key and value alike).
    """
    if name in COLUMNS:
        return weight.chunk(world, dim=0)[rank]
    if name in ROWS:
        return weight.chunk(world, dim=1)[rank]
    return weight


def block(
    shape: Shape,
    ops: SimpleNamespace,
    weights: dict[str, torch.Tensor],
    rank: int = 0,
    world: int = 1,
) -> LlamaBlock:
    """A block (this rank's shard) holding copies of ``weights``' parts."""
    made = LlamaBlock(shape, ops, world)
    with torch.no_grad():
        for name, parameter in made.named_parameters():
            parameter.data = shard(name, weights[name], rank, world).clone()
    return made


def rope_tables(
    length: int, head_dim: int, dtype: torch.dtype, device: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sin, cos)`` of Llama's rotary angles, (length, head_dim / 2) each."""
    frequencies = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.outer(torch.arange(length, dtype=torch.float64), frequencies)
    return angles.sin().to(dtype=dtype, device=device), angles.cos().to(dtype=dtype, device=device)
