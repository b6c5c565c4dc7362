"""One declared backward, every framework's autodiff (``ninetoothed.differentiable``).

A two-layer model whose matmuls are our kernel (backward declared once, with
the same kernel) trains for a few SGD steps on PyTorch, JAX and Paddle; its
losses and weights match the framework-only model's.  Also: gradients of a
kernel with a scalar input, ``torch.compile`` of forward and backward, the
declaration's errors, JAX's vmap and Paddle's ``to_static``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from support.tutorial import differentiable as examples

import ninetoothed
from ninetoothed.errors import LaunchError

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"
STEPS, LEARNING_RATE = 4, 0.05


def _data(seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    # 40 x 24 @ 24 x 48: 3 x 3 programs of 16 x 16 tiles, ragged edges.
    x, target = rng.standard_normal((40, 24)), rng.standard_normal((40, 8))
    w1 = rng.standard_normal((24, 48)) * 0.2
    w2 = rng.standard_normal((48, 8)) * 0.2
    return x, target, w1, w2


def _torch_training(matmul) -> list[float]:
    import torch

    device = "cuda" if ON_GPU else "cpu"
    # float32 on the GPU (Triton's float64 dot is not what we test here).
    dtype = torch.float32 if ON_GPU else torch.float64
    x, target, w1, w2 = (torch.tensor(a, device=device, dtype=dtype) for a in _data(1))
    w1.requires_grad_(True)
    w2.requires_grad_(True)
    losses = []
    for _ in range(STEPS):
        loss = ((matmul(torch.relu(matmul(x, w1)), w2) - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for weight in (w1, w2):
                weight -= LEARNING_RATE * weight.grad
                weight.grad = None
        losses.append(loss.item())
    return losses


def test_torch_two_layer_training_matches() -> None:
    import torch

    ours = _torch_training(examples.linear)
    reference = _torch_training(torch.matmul)
    np.testing.assert_allclose(ours, reference, rtol=1e-2 if ON_GPU else 1e-10)
    assert ours[-1] < ours[0]


def test_jax_two_layer_training_matches() -> None:
    import jax
    import jax.numpy as jnp

    def training(matmul) -> list[float]:
        x, target, w1, w2 = (jnp.asarray(a, dtype=jnp.float32) for a in _data(2))

        def loss(w1, w2):
            return ((matmul(jax.nn.relu(matmul(x, w1)), w2) - target) ** 2).mean()

        step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
        losses = []
        for _ in range(STEPS):
            value, (g1, g2) = step(w1, w2)
            w1, w2 = w1 - LEARNING_RATE * g1, w2 - LEARNING_RATE * g2
            losses.append(float(value))
        return losses

    ours, reference = training(examples.linear), training(jnp.matmul)
    np.testing.assert_allclose(ours, reference, rtol=1e-2 if ON_GPU else 1e-5)
    assert ours[-1] < ours[0]


def test_paddle_two_layer_training_matches() -> None:
    paddle = pytest.importorskip("paddle")

    def training(matmul) -> list[float]:
        x, target, w1, w2 = (paddle.to_tensor(a) for a in _data(3))
        w1.stop_gradient = False
        w2.stop_gradient = False
        losses = []
        for _ in range(STEPS):
            loss = ((matmul(paddle.nn.functional.relu(matmul(x, w1)), w2) - target) ** 2).mean()
            loss.backward()
            with paddle.no_grad():
                for weight in (w1, w2):
                    weight.set_value(weight - LEARNING_RATE * weight.grad)
                    weight.clear_gradient()
            losses.append(float(loss))
        return losses

    ours, reference = training(examples.linear), training(paddle.matmul)
    np.testing.assert_allclose(ours, reference, rtol=1e-10)
    assert ours[-1] < ours[0]


def test_scalar_inputs_get_no_gradient(framework) -> None:
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(70), rng.standard_normal(70)  # 3 programs of 32
    if framework.name == "jax":
        import jax

        grads = jax.grad(lambda a, b: examples.scaled_add(a, b, 0.25).sum(), argnums=(0, 1))(
            framework.from_numpy(x), framework.from_numpy(y)
        )
        got = [np.asarray(g) for g in grads]
    else:
        a, b = framework.from_numpy(x), framework.from_numpy(y)
        _require_grad(framework.name, a, b)
        examples.scaled_add(a, b, 0.25).sum().backward()
        got = [framework.to_numpy(a.grad), framework.to_numpy(b.grad)]
    np.testing.assert_allclose(got[0], np.ones(70))
    np.testing.assert_allclose(got[1], np.full(70, 0.25))


def _require_grad(name: str, *tensors) -> None:
    for tensor in tensors:
        if name == "torch":
            tensor.requires_grad_(True)
        else:
            tensor.stop_gradient = False


def test_torch_compiled_forward_and_backward_equal_eager() -> None:
    import torch
    from torch._dynamo.utils import counters

    x, _, w1, w2 = (torch.tensor(a, device=DEVICE, dtype=torch.float32) for a in _data(5))
    w1.requires_grad_(True)

    def model(x, w1, w2):
        return examples.linear(torch.relu(examples.linear(x, w1)), w2).square().sum()

    model(x, w1, w2).backward()
    eager = w1.grad.clone()
    w1.grad = None
    torch._dynamo.reset()
    counters.clear()
    torch.compile(model, fullgraph=True)(x, w1, w2).backward()
    torch.testing.assert_close(w1.grad, eager)
    assert sum(counters["graph_break"].values()) == 0


@pytest.mark.interpreter_only  # CPU tensors
def test_declaration_errors() -> None:
    import torch

    with pytest.raises(TypeError, match="ninetoothed kernel"):
        ninetoothed.functional(lambda a: a)
    with pytest.raises(LaunchError, match="kernel writes only"):
        ninetoothed.functional(examples.mm, outputs={"nope": "input"})
    with pytest.raises(TypeError, match="backward must be callable"):
        ninetoothed.differentiable(examples.mm, None)
    with pytest.raises(LaunchError, match=r"takes 2 positional arguments \(input, other\)"):
        examples.linear(torch.ones(2, 2))
    wrong = ninetoothed.differentiable(examples.mm_functional, lambda i, o, g: (g[0],))
    a = torch.randn(16, 16, requires_grad=True)
    with pytest.raises(LaunchError, match="returned 1 gradient"):
        wrong(a, torch.randn(16, 16)).sum().backward()
    with pytest.raises(ValueError, match="fold-leading"):
        ninetoothed.batching(examples.mm, "sideways")


@pytest.mark.interpreter_only  # jax-triton's custom call: its vmap is unchecked (no GPU here)
def test_jax_vmap_matches_a_python_loop() -> None:
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(6)
    xs, ys = jnp.asarray(rng.standard_normal((3, 70))), jnp.asarray(rng.standard_normal(70))
    batched = jax.vmap(lambda x: examples.scaled_add(x, ys, 2.0))(xs)
    loop = jnp.stack([examples.scaled_add(x, ys, 2.0) for x in xs])
    np.testing.assert_allclose(batched, loop)
    np.testing.assert_allclose(batched, xs + 2 * ys)


def test_paddle_kernels_refuse_grad_and_run_under_to_static() -> None:
    paddle = pytest.importorskip("paddle")
    x, y = paddle.randn([70]), paddle.randn([70])

    def block(x, y):
        z = paddle.full_like(x, float("nan"))
        examples.scaled_add_kernel(x, y, 0.5, z)
        return z * 2

    expected = (x + 0.5 * y) * 2
    np.testing.assert_allclose(block(x, y).numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(
        paddle.jit.to_static(block)(x, y).numpy(), expected.numpy(), rtol=1e-6
    )
    x.stop_gradient = False
    with pytest.raises(LaunchError, match="stop_gradient=False"):
        block(x, y)


def test_jax_grad_of_a_kernel_without_backward_is_refused() -> None:
    import jax
    import jax.numpy as jnp

    def total(x):
        out = jax.ShapeDtypeStruct((40,), jnp.float32)
        return examples.scaled_add_kernel(x, x, 1.0, out).sum()

    x = jnp.ones(40)
    with pytest.raises(LaunchError, match="being differentiated.*no backward"):
        jax.grad(total)(x)
    # Cut from the graph on purpose: allowed.
    np.testing.assert_allclose(jax.grad(lambda x: total(jax.lax.stop_gradient(x)) + x.sum())(x), 1)


def test_every_framework_package_has_the_same_make_and_jit() -> None:
    import nt_torch

    nt_jax = pytest.importorskip("nt_jax", reason="nt-jax is not installed here")
    nt_paddle = pytest.importorskip("nt_paddle", reason="nt-paddle is not installed here")

    for package in (nt_torch, nt_paddle, nt_jax):
        assert package.make is ninetoothed.make and package.jit is ninetoothed.jit
    # A kernel made through one package runs on another framework's tensors.
    import torch

    kernel = nt_paddle.make(
        examples.scaled_add_arrangement,
        examples.scaled_add_application,
        tuple(p.source for p in examples.scaled_add_kernel.spec.parameters),
        configs=[{"BLOCK": 32}],
    )
    x, y = torch.randn(50, device=DEVICE), torch.randn(50, device=DEVICE)
    z = torch.full_like(x, float("nan"))
    kernel(x, y, 2.0, z)
    torch.testing.assert_close(z, x + 2 * y)
