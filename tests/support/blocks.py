"""A small block of the library's ops and its float64 reference (tests and benchmarks)."""

from __future__ import annotations

import torch

from nt_torch import ops


def block(x: torch.Tensor, weight: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """rms_norm -> mm -> silu -> add, the library's ops only."""
    h = ops.rms_norm(x, weight)
    h = ops.mm(h, b)
    h = ops.silu(h)
    return ops.add(h, x)


def torch_block(x: torch.Tensor, weight: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The block in torch's functions (what compiled blocks of ours are measured against)."""
    h = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, 1e-6)
    return torch.nn.functional.silu(h @ b) + x


def reference(x: torch.Tensor, weight: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The block in float64 (``rms_norm``'s epsilon 1e-6)."""
    x, weight, b = x.double(), weight.double(), b.double()
    h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
    return torch.nn.functional.silu(h @ b) + x


def attention_block(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    """rms_norm -> causal attention -> addmm, with scalar arguments (eps, scale, alpha,
    beta) and keywords: the library's ops only.  ``q``, ``k``, ``v`` are (1, heads, n, d)."""
    h = ops.rms_norm(q, weight, eps=1e-5)
    h = ops.scaled_dot_product_attention(h, k, v, is_causal=True, scale=0.125)
    return ops.addmm(v[0, 0], k[0, 0], h[0, 0].t(), beta=0.5, alpha=2.0)


def torch_attention_block(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    """:func:`attention_block` in torch's functions."""
    h = torch.nn.functional.rms_norm(q, (q.shape[-1],), weight, 1e-5)
    h = torch.nn.functional.scaled_dot_product_attention(h, k, v, is_causal=True, scale=0.125)
    return torch.addmm(v[0, 0], k[0, 0], h[0, 0].t(), beta=0.5, alpha=2.0)
