"""The library ops' backward rules (``ninetoothed.library.gradients``) against autograd.

Each rule is declared over a forward written with the framework's own ops
(``ninetoothed.differentiable(forward, rule)``), so the test checks the rule
and the declaration machinery; pairing the rules with the library's kernels
(``nt_torch.ops``) is a one-line declaration each.  Broadcast inputs, batch
dimensions and odd sizes included; float64 where the framework allows.
"""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
from ninetoothed.library import gradients

SHAPES = {
    "add": [(3, 5, 7), (5, 1)],
    "mm": [(6, 5), (5, 7)],
    "bmm": [(2, 6, 5), (2, 5, 7)],
    "addmm": [(1, 7), (6, 5), (5, 7)],
    "silu": [(4, 9)],
    "softmax": [(4, 9)],
    "rms_norm": [(3, 4, 8), (8,)],
    "rope": [(2, 3, 8), (3, 8), (3, 8)],
}
EXTRA = {"addmm": (0.5, 2.0), "rms_norm": (1e-6,)}
DIFFERENTIATED = {"rope": 1}
"""How many leading inputs get gradients (rope's sin and cos are constants)."""


def _rope(concat):
    """Rotary embedding over halves, with a framework's concatenation."""

    def rope(x, sin, cos):
        half = x.shape[-1] // 2
        return x * cos + concat([-x[..., half:], x[..., :half]], -1) * sin

    return rope


def _torch_forwards():
    import torch

    rope = _rope(torch.cat)
    return {
        "add": torch.add,
        "mm": torch.mm,
        "bmm": torch.bmm,
        "addmm": lambda i, a, b, beta, alpha: torch.addmm(i, a, b, beta=beta, alpha=alpha),
        "silu": torch.nn.functional.silu,
        "softmax": lambda x: torch.softmax(x, -1),
        "rms_norm": lambda x, w, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps),
        "rope": rope,
    }


def _jax_forwards():
    import jax
    import jax.numpy as jnp

    def rms_norm(x, w, eps):
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + eps) * w

    rope = _rope(jnp.concatenate)
    return {
        "add": jnp.add,
        "mm": jnp.matmul,
        "bmm": jnp.matmul,
        "addmm": lambda i, a, b, beta, alpha: beta * i + alpha * (a @ b),
        "silu": jax.nn.silu,
        "softmax": lambda x: jax.nn.softmax(x, -1),
        "rms_norm": rms_norm,
        "rope": rope,
    }


def _paddle_forwards():
    import paddle

    rope = _rope(paddle.concat)

    def rms_norm(x, w, eps):
        return x * paddle.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

    return {
        "add": paddle.add,
        "mm": paddle.mm,
        "bmm": paddle.bmm,
        "addmm": lambda i, a, b, beta, alpha: beta * i + alpha * (a @ b),
        "silu": paddle.nn.functional.silu,
        "softmax": lambda x: paddle.nn.functional.softmax(x, -1),
        "rms_norm": rms_norm,
        "rope": rope,
    }


def _arrays(op: str) -> list[np.ndarray]:
    rng = np.random.default_rng(len(op))
    return [rng.standard_normal(shape) for shape in SHAPES[op]]


@pytest.mark.parametrize("op", list(SHAPES))
def test_torch(op: str) -> None:
    import torch

    forward = _torch_forwards()[op]
    declared = ninetoothed.differentiable(forward, getattr(gradients, op))
    arrays = _arrays(op)
    grad = torch.tensor(
        np.random.default_rng(0).standard_normal(
            forward(*(torch.tensor(a) for a in arrays), *EXTRA.get(op, ())).shape
        )
    )
    results = []
    for function in (declared, forward):
        count = DIFFERENTIATED.get(op, len(arrays))
        tensors = [torch.tensor(a, requires_grad=i < count) for i, a in enumerate(arrays)]
        out = function(*tensors, *EXTRA.get(op, ()))
        results.append((out, torch.autograd.grad(out, tensors[:count], grad)))
    torch.testing.assert_close(results[0][0], results[1][0])
    for got, want in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("op", list(SHAPES))
def test_jax(op: str) -> None:
    import jax
    import jax.numpy as jnp

    forward = _jax_forwards()[op]
    declared = ninetoothed.differentiable(forward, getattr(gradients, op))
    arrays = [jnp.asarray(a, dtype=jnp.float32) for a in _arrays(op)]
    extra = EXTRA.get(op, ())
    positions = tuple(range(DIFFERENTIATED.get(op, len(arrays))))

    def loss(function):
        return lambda *xs: (function(*xs, *extra) ** 2).sum()

    got = jax.grad(loss(declared), argnums=positions)(*arrays)
    want = jax.grad(loss(forward), argnums=positions)(*arrays)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("op", list(SHAPES))
def test_paddle(op: str) -> None:
    paddle = pytest.importorskip("paddle")
    forward = _paddle_forwards()[op]
    declared = ninetoothed.differentiable(forward, getattr(gradients, op))
    results = []
    for function in (declared, forward):
        arrays = _arrays(op)
        count = DIFFERENTIATED.get(op, len(arrays))
        tensors = [paddle.to_tensor(a, stop_gradient=i >= count) for i, a in enumerate(arrays)]
        (function(*tensors, *EXTRA.get(op, ())) ** 2).sum().backward()
        results.append([t.grad.numpy() for t in tensors[:count]])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
