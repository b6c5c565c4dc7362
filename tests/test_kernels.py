"""The seed documents' kernels, for every framework, on the interpreter or the GPU.

Each test draws fresh random inputs, poisons the outputs, runs the kernel and
compares with a float64 numpy reference by relative error.  Sizes include 1,
sizes that are not multiples of any tile (17, 1000), non-contiguous inputs and
empty tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
from support.base import ON_GPU

from nt_examples import add, addmm, attention, conv2d, elementwise, matmul, softmax

RNG = np.random.default_rng()


def random(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    actual = actual.astype(np.float64)
    expected = expected.astype(np.float64)
    assert not np.isnan(actual).any(), "the kernel left NaN (poison or a wrong result) behind"
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(actual - expected) / (norm if norm else 1.0))


def tolerance(dtype: str, matrix: bool = False) -> float:
    """Float32 dot products use TF32 on the GPU (about 3e-4); float16 rounds near 1e-3."""
    if dtype == "float16":
        return 5e-3
    return 2e-3 if (matrix and ON_GPU) else 1e-5


@pytest.mark.parametrize("size", [1, 17, 1000])
@pytest.mark.parametrize("style", ["make", "jit"])
def test_add(framework, size, style):
    dtype = "float16" if ON_GPU else "float32"
    x, y = random(size, dtype=dtype), random(size, dtype=dtype)
    kernel = add.kernel if style == "make" else add.add_kernel
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((size,), dtype)]
    (z,) = framework.call(kernel, args, {}, outputs=[2])
    assert relative_error(z, x.astype(np.float64) + y) < tolerance(dtype)


def test_add_constexpr_block_size(framework):
    x, y = random(100), random(100)
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((100,), "float32")]
    (z,) = framework.call(add.constexpr_kernel, args, {"BLOCK_SIZE": 32}, outputs=[2])
    assert relative_error(z, x.astype(np.float64) + y) < 1e-6


def test_add_non_contiguous(framework):
    x, y = random(300), random(300)
    args = [
        framework.non_contiguous(x),
        framework.from_numpy(y),
        framework.poisoned((300,), "float32"),
    ]
    (z,) = framework.call(add.kernel, args, {}, outputs=[2])
    assert relative_error(z, x.astype(np.float64) + y) < 1e-6


def test_add_empty(framework):
    args = [framework.from_numpy(random(0)), framework.from_numpy(random(0))]
    args.append(framework.from_numpy(np.zeros(0, np.float32)))
    (z,) = framework.call(add.kernel, args, {}, outputs=[2])
    assert z.shape == (0,)


@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 9), (64, 40, 70)])
@pytest.mark.parametrize("style", ["make", "jit"])
def test_matmul(framework, shape, style):
    m, k, n = shape
    dtype = "float16"
    a, b = random(m, k, dtype=dtype), random(k, n, dtype=dtype)
    kernel = matmul.kernel if style == "make" else matmul.matmul_kernel
    args = [framework.from_numpy(a), framework.from_numpy(b), framework.poisoned((m, n), dtype)]
    (c,) = framework.call(kernel, args, {}, outputs=[2])
    assert relative_error(c, a.astype(np.float64) @ b) < tolerance(dtype, matrix=True)


def test_matmul_non_contiguous(framework):
    a, b = random(33, 20), random(20, 18)
    args = [framework.non_contiguous(a), framework.non_contiguous(b)]
    args.append(framework.poisoned((33, 18), "float32"))
    (c,) = framework.call(matmul.kernel, args, {}, outputs=[2])
    assert relative_error(c, a.astype(np.float64) @ b) < tolerance("float32", matrix=True)


@pytest.mark.parametrize("shape", [(1, 1), (5, 37), (3, 1000)])
def test_softmax(framework, shape):
    x = random(*shape) * 4
    args = [framework.from_numpy(x), framework.poisoned(shape, "float32")]
    block = triton.next_power_of_2(shape[-1])
    (y,) = framework.call(softmax.kernel, args, {"BLOCK_SIZE": block}, outputs=[1])
    exponentials = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    assert relative_error(y, exponentials / exponentials.sum(-1, keepdims=True)) < 1e-5


def test_addmm_reuses_matmul_application(framework):
    m, k, n = 19, 23, 29
    input, mat1, mat2 = random(m, n), random(m, k), random(k, n)
    beta, alpha = 0.5, 2.0
    args = [framework.from_numpy(t) for t in (input, mat1, mat2)]
    args += [beta, alpha, framework.poisoned((m, n), "float32")]
    (output,) = framework.call(addmm.kernel, args, {}, outputs=[5])
    expected = beta * input.astype(np.float64) + alpha * (mat1.astype(np.float64) @ mat2)
    assert relative_error(output, expected) < tolerance("float32", matrix=True)


def conv2d_reference(input: np.ndarray, filter: np.ndarray) -> np.ndarray:
    n, c, h, w = input.shape
    k, _, r, s = filter.shape
    p, q = h - r + 1, w - s + 1
    output = np.zeros((n, k, p, q))
    for i in range(r):
        for j in range(s):
            window = input[:, :, i : i + p, j : j + q].astype(np.float64)
            output += np.einsum("nchw,kc->nkhw", window, filter[:, :, i, j].astype(np.float64))
    return output


@pytest.mark.parametrize("shape", [(1, 1, 3, 3, 1, 1, 1), (2, 3, 7, 6, 4, 3, 2)])
def test_conv2d_implicit_gemm(framework, shape):
    n, c, h, w, k, r, s = shape
    input, filter = random(n, c, h, w), random(k, c, r, s)
    output_shape = (n, k, h - r + 1, w - s + 1)
    args = [framework.from_numpy(input), framework.from_numpy(filter)]
    args.append(framework.poisoned(output_shape, "float32"))
    (output,) = framework.call(conv2d.kernel, args, {}, outputs=[2])
    assert relative_error(output, conv2d_reference(input, filter)) < tolerance("float32", True)


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) * scale
    length = q.shape[-2]
    scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("shape", [(1, 1, 16, 16), (1, 2, 40, 32)])
def test_attention_three_level_offsets(framework, shape):
    dtype = "float16"
    q, k, v = (random(*shape, dtype=dtype) for _ in range(3))
    scale = 1 / np.sqrt(shape[-1])
    args = [framework.from_numpy(t) for t in (q, k, v)]
    args += [float(scale), framework.poisoned(shape, dtype)]
    (o,) = framework.call(attention.kernel, args, {}, outputs=[4])
    assert relative_error(o, attention_reference(q, k, v, scale)) < 1e-2


@pytest.mark.parametrize("size", [1, 17, 1000])
def test_scalar_parameter(framework, size):
    x = random(size)
    args = [framework.from_numpy(x), 3.5, framework.poisoned((size,), "float32")]
    (y,) = framework.call(elementwise.scale_kernel, args, {}, outputs=[2])
    assert relative_error(y, 3.5 * x.astype(np.float64)) < 1e-6


def test_inlined_helper(framework):
    x = random(200)
    args = [framework.from_numpy(x), framework.poisoned((200,), "float32")]
    (y,) = framework.call(elementwise.silu_kernel, args, {}, outputs=[1])
    x64 = x.astype(np.float64)
    assert relative_error(y, x64 / (1 + np.exp(-x64))) < 1e-5


@pytest.mark.parametrize("shape", [(1, 1), (17, 33), (70, 5)])
def test_2d_tiles_non_contiguous(framework, shape):
    x = random(*shape)
    args = [framework.non_contiguous(x), framework.poisoned(shape, "float32")]
    (y,) = framework.call(elementwise.copy_2d_kernel, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, x)


def test_libdevice_source():
    """libdevice calls become ``libdevice.<name>`` with its import (runs on the GPU test)."""
    source = elementwise.tanh_kernel.source
    assert "from triton.language.extra import libdevice" in source
    assert "libdevice.tanh(" in source


@pytest.mark.gpu
@pytest.mark.skipif(
    not ON_GPU, reason="Triton's interpreter has no libdevice (NotImplementedError)"
)
def test_libdevice(framework):
    x = random(1000)
    args = [framework.from_numpy(x), framework.poisoned((1000,), "float32")]
    (y,) = framework.call(elementwise.tanh_kernel, args, {}, outputs=[1])
    assert relative_error(y, np.tanh(x.astype(np.float64))) < 1e-5
