"""Op sets: the five operations the end-to-end benchmark swaps into a Llama model.

An ``OpSet`` is a small object of torch-like functions; ``llama_patch`` puts
one into a model's Linear, RMSNorm, SiLU and attention (with rope) modules.
Three are defined here: ``torch`` (plain torch, to check the patching itself),
``triton`` (the hand-written baselines) and ``ours`` (``nt_torch.ops``, when the
kernel library has the five ops).  A new op set is one more function that
fills the five fields.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class OpSet:
    """The operations, with their calling conventions:

    * ``mm(a, b)``: 2-D matrix product (``b`` is a transposed weight: strided);
    * ``rms_norm(x, weight, eps)``: over the last dimension;
    * ``rope(x, sin, cos, interleaved)``: ``x`` (batch, seq, heads, head_dim),
      tables (seq, head_dim / 2);
    * ``sdpa(q, k, v, is_causal, scale)``: q (batch, heads, Lq, D), k and v
      (batch, kv_heads, Lk, D) with kv_heads dividing heads; causal aligned
      top-left as in torch;
    * ``silu(x)``.
    """

    name: str
    mm: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    rms_norm: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
    rope: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor]
    sdpa: Callable[..., torch.Tensor]
    silu: Callable[[torch.Tensor], torch.Tensor]


def _torch_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Hugging Face's LlamaRMSNorm, as a function."""
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def _torch_sdpa(q, k, v, is_causal: bool, scale: float) -> torch.Tensor:
    # bool(): compiled with dynamic shapes, ``length > 1`` is a SymBool, which torch's
    # builtin refuses (a graph break per call); ours reads it as a Python bool.
    return F.scaled_dot_product_attention(
        q, k, v, is_causal=bool(is_causal), scale=scale, enable_gqa=k.shape[1] != q.shape[1]
    )


def torch_opset() -> OpSet:
    """Plain torch: with it the patched model must compute what the original does."""
    from tasks import torch_rope

    return OpSet("torch", torch.mm, _torch_rms_norm, torch_rope, _torch_sdpa, F.silu)


def triton_opset() -> OpSet:
    """The hand-written Triton baselines."""
    from baselines import mm, rms_norm, rope, sdpa, silu

    return OpSet(
        "triton",
        mm.mm,
        rms_norm.rms_norm,
        rope.rope,
        lambda q, k, v, is_causal, scale: sdpa.sdpa(q, k, v, is_causal, scale),
        silu.silu,
    )


def repeat_kv(kv: torch.Tensor, heads: int) -> torch.Tensor:
    """(batch, kv_heads, L, D) repeated to (batch, heads, L, D)."""
    batch, kv_heads, length, dim = kv.shape
    if kv_heads == heads:
        return kv
    expanded = kv[:, :, None].expand(batch, kv_heads, heads // kv_heads, length, dim)
    return expanded.reshape(batch, heads, length, dim)


def _ours_sdpa(op: Callable) -> Callable:
    """Our attention with grouped-query heads: natively when the op takes
    ``enable_gqa`` (torch's spelling), else on repeated keys and values."""
    try:
        native = "enable_gqa" in inspect.signature(op).parameters
    except (TypeError, ValueError):
        native = False

    def sdpa(q, k, v, is_causal: bool, scale: float) -> torch.Tensor:
        if native:
            return op(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=True)
        heads = q.shape[1]
        return op(q, repeat_kv(k, heads), repeat_kv(v, heads), is_causal=is_causal, scale=scale)

    return sdpa


def ours_opset(ops: ModuleType) -> OpSet:
    """``nt_torch.ops`` as an op set; raises AttributeError naming a missing op."""

    def find(*names: str) -> Callable:
        for name in names:
            if hasattr(ops, name):
                return getattr(ops, name)
        raise AttributeError(f"nt_torch.ops has none of {names}")

    mm, rms_norm, silu = find("mm"), find("rms_norm"), find("silu")
    rope = find("rope", "rotary_position_embedding")
    return OpSet(
        "ours",
        mm,
        lambda x, weight, eps: rms_norm(x, weight=weight, eps=eps),
        lambda x, sin, cos, interleaved: rope(x, sin, cos, interleaved=interleaved),
        _ours_sdpa(find("sdpa", "scaled_dot_product_attention")),
        silu,
    )


def build(name: str) -> OpSet:
    """The op set called ``name``: ``torch``, ``triton`` or ``ours``."""
    if name == "torch":
        return torch_opset()
    if name == "triton":
        return triton_opset()
    if name == "ours":
        import ours

        ops = ours.module("nt_torch.ops")
        if isinstance(ops, BaseException):
            raise ops
        return ours_opset(ops)
    raise ValueError(f"unknown op set {name!r}")
