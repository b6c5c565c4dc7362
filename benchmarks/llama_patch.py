"""Swap an op set into a Hugging Face Llama model, and back.

``patched(model, opset)`` replaces, for its duration, the ``forward`` of every
``nn.Linear`` (by ``opset.mm``), of every RMSNorm (``opset.rms_norm``), the MLPs'
activation (``opset.silu``) and the attention modules' ``forward`` (the
projections, ``opset.rope`` on queries and keys in their (batch, seq, heads,
head_dim) layout, the cache update, ``opset.sdpa``, the output projection), as
the paper's section 5.3.2 does.  Attention gets no mask: the benchmark's
batches are unpadded, so a prompt is causal and a decoding step sees the whole
cache.  The attention written here follows transformers 5's
``LlamaAttention.forward``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import MethodType

import torch
from opsets import OpSet
from torch import nn


def _linear(opset: OpSet):
    def forward(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        y = opset.mm(x.reshape(-1, self.in_features), self.weight.t())
        y = y.view(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias

    return forward


def _rms_norm(opset: OpSet):
    def forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return opset.rms_norm(x, self.weight, self.variance_epsilon)

    return forward


class SiLU(nn.Module):
    """The op set's ``silu`` as a module (what ``LlamaMLP.act_fn`` holds)."""

    def __init__(self, opset: OpSet) -> None:
        super().__init__()
        self.opset = opset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``silu(x)``."""
        return self.opset.silu(x)


def _attention(opset: OpSet):
    tables: dict[str, object] = {}  # the last step's (L, head_dim / 2) tables, for every layer

    def halves(cos: torch.Tensor, sin: torch.Tensor, half: int) -> tuple[torch.Tensor, ...]:
        # The model computes (cos, sin) once per step and hands every layer the
        # same tensors: make the contiguous tables once, not once per layer.
        if tables.get("key") is not cos:
            # Unpadded batches: every row has the same positions, so row 0's serve.
            tables["key"] = cos
            tables["value"] = (sin[0, :, :half].contiguous(), cos[0, :, :half].contiguous())
        return tables["value"]

    def forward(
        self: nn.Module,
        hidden_states: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        attention_mask: torch.Tensor | None = None,
        past_key_values=None,
        **kwargs,
    ) -> tuple[torch.Tensor, None]:
        batch, length, _ = hidden_states.shape
        shape = (batch, length, -1, self.head_dim)
        cos, sin = position_embeddings  # (batch, length, head_dim), halves repeated
        sin, cos = halves(cos, sin, self.head_dim // 2)
        q = opset.rope(self.q_proj(hidden_states).view(shape), sin, cos, False).transpose(1, 2)
        k = opset.rope(self.k_proj(hidden_states).view(shape), sin, cos, False).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        if past_key_values is not None:
            k, v = past_key_values.update(k, v, self.layer_idx)
        if length > 1 and k.shape[2] != length:
            raise NotImplementedError("a multi-token step after a cache needs a mask")
        out = opset.sdpa(q, k, v, length > 1, self.scaling)
        out = out.transpose(1, 2).reshape(batch, length, -1)
        return self.o_proj(out), None

    return forward


def _is_rms_norm(module: nn.Module) -> bool:
    return type(module).__name__.endswith("RMSNorm") and hasattr(module, "variance_epsilon")


def _is_attention(module: nn.Module) -> bool:
    return type(module).__name__.endswith("Attention") and hasattr(module, "q_proj")


@contextlib.contextmanager
def patched(model: nn.Module, opset: OpSet) -> Iterator[dict[str, int]]:
    """Run ``model`` with ``opset``'s operations inside the ``with`` block; yields
    how many modules of each kind were replaced."""
    forwards = {
        "linear": (lambda m: isinstance(m, nn.Linear), _linear(opset)),
        "rms_norm": (_is_rms_norm, _rms_norm(opset)),
        "attention": (_is_attention, _attention(opset)),
    }
    replaced: list[nn.Module] = []
    activations: list[tuple[nn.Module, nn.Module]] = []
    counts = dict.fromkeys([*forwards, "silu"], 0)
    try:
        for module in model.modules():
            for kind, (matches, forward) in forwards.items():
                if matches(module):
                    module.forward = MethodType(forward, module)
                    replaced.append(module)
                    counts[kind] += 1
            if hasattr(module, "act_fn") and hasattr(module, "gate_proj"):
                activations.append((module, module.act_fn))
                module.act_fn = SiLU(opset)
                counts["silu"] += 1
        yield counts
    finally:
        for module in replaced:
            del module.forward  # the class's own forward again
        for module, activation in activations:
            module.act_fn = activation
