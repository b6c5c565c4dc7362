"""FlashAttention-2 forward and backward kernels (``tests/support/tutorial/flash_attention.py``).

Gradients through the declared backward against the framework's own autograd
of causal attention, computed in float64, on ragged sequence lengths with
several programs per dimension (16-wide tiles).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from support.tutorial.flash_attention import FlashAttention

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
PINNED = [{"BM": 16, "BN": 16}]
TOLERANCE = 2e-2 if ON_GPU else 1e-4  # float32 dots run as TF32 on the GPU


@pytest.fixture(scope="module")
def flash() -> FlashAttention:
    return FlashAttention(configs=PINNED)


def _inputs(shape, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]


@pytest.mark.parametrize("shape", [(1, 2, 40, 16), (2, 1, 33, 32), (1, 1, 16, 16)])
def test_torch_gradients_match_autograd(flash: FlashAttention, shape) -> None:
    import torch

    device = "cuda" if ON_GPU else "cpu"
    q, k, v, do = (torch.tensor(a, device=device) for a in _inputs(shape, sum(shape)))
    scale = 1 / math.sqrt(shape[-1])
    for tensor in (q, k, v):
        tensor.requires_grad_(True)
    out, _ = flash.attention(q, k, v, scale)
    grads = torch.autograd.grad(out, (q, k, v), do)

    exact = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    expected = torch.nn.functional.scaled_dot_product_attention(*exact, is_causal=True, scale=scale)
    expected_grads = torch.autograd.grad(expected, exact, do.double())
    torch.testing.assert_close(out.double(), expected, atol=TOLERANCE, rtol=TOLERANCE)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got.double(), want, atol=TOLERANCE, rtol=TOLERANCE)


def test_jax_gradients_match_jax(flash: FlashAttention) -> None:
    import jax
    import jax.numpy as jnp

    shape = (1, 2, 40, 16)
    q, k, v, do = (jnp.asarray(a) for a in _inputs(shape, 7))
    scale = 1 / math.sqrt(shape[-1])

    def reference(q, k, v):
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * scale
        mask = jnp.tril(jnp.ones((shape[2], shape[2]), dtype=bool))
        weights = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1)
        return jnp.einsum("bhqk,bhkd->bhqd", weights, v)

    def ours(q, k, v):
        return flash.attention(q, k, v, scale)[0]

    got = jax.vjp(ours, q, k, v)[1](do)
    want = jax.vjp(reference, q, k, v)[1](do)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=TOLERANCE, rtol=TOLERANCE)
