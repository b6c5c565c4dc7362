"""The tutorial's kernels (language features), for every framework, on the interpreter or the GPU.

Each test draws fresh random inputs, poisons the outputs, runs the kernel and
compares with a float64 numpy reference by relative error.  Sizes include 1,
sizes that are not multiples of any tile (17, 1000), non-contiguous inputs and
empty tensors.

Auto-tuned kernels run twice: ``tuned`` as users call them, and ``pinned`` to
small tiles (4, or 16 for ``tl.dot``), so every shape is a grid of several
programs in each dimension with ragged last tiles.  (Under the interpreter,
tuning takes the largest configuration: a test shape would be one program,
and a bug in how programs find their tiles would pass.)
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
from support.base import ON_GPU
from support.tutorial import add, elementwise, matmul, softmax

from ninetoothed.errors import LaunchError

RNG = np.random.default_rng()


def random(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    actual = actual.astype(np.float64)
    expected = expected.astype(np.float64)
    assert not np.isnan(actual).any(), "the kernel left NaN (poison or a wrong result) behind"
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(actual - expected) / (norm if norm else 1.0))


TILES = ["tuned", "pinned"]


def meta(kernel, tiles: str, size: int = 4) -> dict[str, int]:
    """No meta values (tuning chooses), or every meta symbol pinned to ``size``."""
    return dict.fromkeys(kernel.spec.meta_symbols, size) if tiles == "pinned" else {}


def tolerance(dtype: str, matrix: bool = False) -> float:
    """Float32 dot products use TF32 on the GPU (about 3e-4); float16 rounds near 1e-3."""
    if dtype == "float16":
        return 5e-3
    return 2e-3 if (matrix and ON_GPU) else 1e-5


@pytest.mark.parametrize("size", [1, 17, 1000])
@pytest.mark.parametrize("style", ["make", "jit"])
@pytest.mark.parametrize("tiles", TILES)
def test_add(framework, size, style, tiles):
    dtype = "float16" if ON_GPU else "float32"
    x, y = random(size, dtype=dtype), random(size, dtype=dtype)
    kernel = add.kernel if style == "make" else add.add_kernel
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((size,), dtype)]
    # 1000 elements: 8 programs of 128 (the interpreter runs each in Python).
    tile = 4 if size < 100 else 128
    (z,) = framework.call(kernel, args, meta(kernel, tiles, tile), outputs=[2])
    assert relative_error(z, x.astype(np.float64) + y) < tolerance(dtype)


def test_add_constexpr_block_size(framework):
    x, y = random(100), random(100)
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((100,), "float32")]
    (z,) = framework.call(add.constexpr_kernel, args, {"BLOCK_SIZE": 32}, outputs=[2])
    assert relative_error(z, x.astype(np.float64) + y) < 1e-6


@pytest.mark.parametrize("tiles", TILES)
def test_add_non_contiguous(framework, tiles):
    x, y = random(37), random(37)
    args = [
        framework.non_contiguous(x),
        framework.from_numpy(y),
        framework.poisoned((37,), "float32"),
    ]
    (z,) = framework.call(add.kernel, args, meta(add.kernel, tiles), outputs=[2])
    assert relative_error(z, x.astype(np.float64) + y) < 1e-6


def test_add_empty(framework):
    """Empty tensors launch nothing and write nothing: the empty output is a view into
    a poisoned buffer (where the framework has views), whose every element must
    stay as it was; a functional framework returns an empty float32 array."""
    buffer = framework.poisoned((8,), "float32")
    output = buffer[3:3] if framework.name != "jax" else framework.poisoned((0,), "float32")
    args = [framework.from_numpy(random(0)), framework.from_numpy(random(0)), output]
    (z,) = framework.call(add.kernel, args, {}, outputs=[2])
    assert z.shape == (0,) and z.dtype == np.float32
    assert np.isnan(framework.to_numpy(buffer)).all(), "an empty launch wrote the buffer"


def test_add_empty_inputs_and_a_non_empty_output_disagree(framework):
    x, y = framework.from_numpy(random(0)), framework.from_numpy(random(0))
    z = framework.poisoned((5,), "float32")
    with pytest.raises(LaunchError, match=r"'z'.*\(5,\)|\(5,\).*'z'"):
        framework.call(add.kernel, [x, y, z], {}, outputs=[2])


@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 9), (64, 40, 70)])
@pytest.mark.parametrize("style", ["make", "jit"])
@pytest.mark.parametrize("tiles", TILES)
def test_matmul(framework, shape, style, tiles):
    """Pinned to 16 x 16 x 16, (64, 40, 70) is a 4 x 5 grid looping over 3 ragged K tiles."""
    m, k, n = shape
    dtype = "float16"
    a, b = random(m, k, dtype=dtype), random(k, n, dtype=dtype)
    kernel = matmul.kernel if style == "make" else matmul.matmul_kernel
    args = [framework.from_numpy(a), framework.from_numpy(b), framework.poisoned((m, n), dtype)]
    (c,) = framework.call(kernel, args, meta(kernel, tiles, 16), outputs=[2])
    assert relative_error(c, a.astype(np.float64) @ b) < tolerance(dtype, matrix=True)


@pytest.mark.parametrize("tiles", TILES)
def test_matmul_non_contiguous(framework, tiles):
    a, b = random(33, 20), random(20, 18)
    args = [framework.non_contiguous(a), framework.non_contiguous(b)]
    args.append(framework.poisoned((33, 18), "float32"))
    (c,) = framework.call(matmul.kernel, args, meta(matmul.kernel, tiles, 16), outputs=[2])
    assert relative_error(c, a.astype(np.float64) @ b) < tolerance("float32", matrix=True)


@pytest.mark.parametrize("shape", [(1, 1), (5, 37), (3, 1000)])
def test_softmax(framework, shape):
    x = random(*shape) * 4
    args = [framework.from_numpy(x), framework.poisoned(shape, "float32")]
    block = triton.next_power_of_2(shape[-1])
    (y,) = framework.call(softmax.kernel, args, {"BLOCK_SIZE": block}, outputs=[1])
    exponentials = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    assert relative_error(y, exponentials / exponentials.sum(-1, keepdims=True)) < 1e-5


@pytest.mark.parametrize("size", [1, 17, 1000])
@pytest.mark.parametrize("tiles", TILES)
def test_scalar_parameter(framework, size, tiles):
    x = random(size)
    args = [framework.from_numpy(x), 3.5, framework.poisoned((size,), "float32")]
    kernel = elementwise.scale_kernel
    tile = 4 if size < 100 else 128
    (y,) = framework.call(kernel, args, meta(kernel, tiles, tile), outputs=[2])
    assert relative_error(y, 3.5 * x.astype(np.float64)) < 1e-6


@pytest.mark.parametrize("tiles", TILES)
def test_inlined_helper(framework, tiles):
    x = random(45)
    args = [framework.from_numpy(x), framework.poisoned((45,), "float32")]
    kernel = elementwise.silu_kernel
    (y,) = framework.call(kernel, args, meta(kernel, tiles), outputs=[1])
    x64 = x.astype(np.float64)
    assert relative_error(y, x64 / (1 + np.exp(-x64))) < 1e-5


@pytest.mark.parametrize("shape", [(1, 1), (17, 33), (70, 5)])
@pytest.mark.parametrize("tiles", TILES)
def test_2d_tiles_non_contiguous(framework, shape, tiles):
    x = random(*shape)
    args = [framework.non_contiguous(x), framework.poisoned(shape, "float32")]
    kernel = elementwise.copy_2d_kernel
    (y,) = framework.call(kernel, args, meta(kernel, tiles), outputs=[1])
    np.testing.assert_array_equal(y, x)


def test_libdevice_source():
    """libdevice calls become ``libdevice.<name>`` with its import."""
    source = elementwise.tanh_kernel.source
    assert "from triton.language.extra import libdevice" in source
    assert "libdevice.tanh(" in source


@pytest.mark.parametrize("tiles", TILES)
def test_libdevice(framework, tiles):
    """On the GPU, libdevice; under the interpreter, nt_triton._interpreted_libdevice."""
    x = random(1000 if tiles == "tuned" else 45)
    args = [framework.from_numpy(x), framework.poisoned(x.shape, "float32")]
    kernel = elementwise.tanh_kernel
    (y,) = framework.call(kernel, args, meta(kernel, tiles), outputs=[1])
    assert relative_error(y, np.tanh(x.astype(np.float64))) < 1e-5
