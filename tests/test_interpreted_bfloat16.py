"""bfloat16 arithmetic in kernels gives what the GPU gives, under Triton's interpreter too.

Triton's interpreter holds bfloat16 tiles as their raw 16-bit patterns and
handed those bits to numpy's integer arithmetic: sums near 1e38, products near
3e10 where 10 is right, a ``-x`` of 0.5 that is -8, comparisons of negative
numbers backwards, and float32 -> bfloat16 casts that truncate.  nt-triton
computes bfloat16 operations in float32 there and rounds each result once, to
nearest with ties to even, as the GPU does.  Inputs are bfloat16 values;
references are computed in float64 from them, rounded where the kernel rounds.
Every test runs on each framework, with tiles small enough for several
programs in every dimension.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from support.base import ON_GPU
from support.library import assert_close, f64
from support.tutorial import matmul

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

BLOCK = 8
RNG = np.random.default_rng()
BF16 = ml_dtypes.bfloat16


def bf16(array: np.ndarray) -> np.ndarray:
    """``array`` rounded to bfloat16 (to nearest, ties to even)."""
    return np.asarray(array).astype(BF16)


def random_bf16(*shape: int) -> np.ndarray:
    """Normal values, some negative, rounded to bfloat16; none zero (divisors)."""
    values = RNG.standard_normal(shape) * 3
    values[np.abs(values) < 0.05] = 0.5
    return bf16(values)


def tiles(x, y, z):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def add(x, y, z):
    z = x + y  # noqa: F841


def multiply(x, y, z):
    z = x * y  # noqa: F841


def negate_and_subtract(x, y, z):
    z = -x - y  # noqa: F841


def divide(x, y, z):
    z = x / y  # noqa: F841


def maximum(x, y, z):
    z = ntl.maximum(x, y)  # noqa: F841


def smaller(x, y, z):
    z = ntl.where(x < y, x, y)  # noqa: F841


def affine(x, y, z):
    z = x * 2.5 + y - 1  # noqa: F841


def fused(x, y, z):
    z = ntl.fma(x, y, x)  # noqa: F841


def clamped(x, y, z):
    z = ntl.clamp(x, -1.0, 1.5, propagate_nan=ntl.PropagateNan.ALL)  # noqa: F841


ELEMENTWISE = {
    add: lambda x, y: x + y,
    multiply: lambda x, y: x * y,
    negate_and_subtract: lambda x, y: bf16(-x - y),
    divide: lambda x, y: x / y,
    maximum: np.maximum,
    smaller: np.minimum,
    affine: lambda x, y: bf16(bf16(bf16(x * 2.5) + y) - 1),
    fused: lambda x, y: x * y + x,  # exact in float64 for these inputs: rounded once
    clamped: lambda x, y: np.clip(x, -1.0, 1.5),
}
"""Each application and its reference on float64 values (rounded where the kernel rounds
between operations; the result is rounded by the comparison)."""


@pytest.mark.parametrize("application", list(ELEMENTWISE), ids=lambda f: f.__name__)
def test_elementwise_operations_round_once(framework, application) -> None:
    kernel = ninetoothed.make(tiles, application, (Tensor(1), Tensor(1), Tensor(1)))
    x, y = random_bf16(37), random_bf16(37)
    x[:4], y[:4] = [-1.5, 2.0, -0.5, 3.0], [-2.0, -2.0, 0.25, 3.0]  # signs both ways, a tie
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((37,), "bfloat16")]
    (z,) = framework.call(kernel, args, {}, [2])
    expected = f64(bf16(ELEMENTWISE[application](f64(x), f64(y))))
    if application is divide:  # a GPU divides float32 to within 2 ulp: a bfloat16 ulp
        np.testing.assert_allclose(np.asarray(z, dtype=np.float64), expected, rtol=2**-7)
    elif application is affine and ON_GPU:
        # The GPU's compiler may contract x * 2.5 + y into one fused multiply-add, which
        # rounds once for both: each element is one of the two roundings.
        contracted = f64(bf16(bf16(f64(x) * 2.5 + f64(y)) - 1))
        actual = np.asarray(z, dtype=np.float64)
        assert np.all((actual == expected) | (actual == contracted)), (actual, expected)
    else:
        np.testing.assert_array_equal(np.asarray(z, dtype=np.float64), expected)


def rows(x, z):
    return x.tile((1, BLOCK)), z.tile((1, BLOCK))


def centred(x, z):
    z = x - ntl.max(x) + ntl.sum(x)  # noqa: F841


def running_sum(x, z):
    z = ntl.cumsum(x, 1)  # noqa: F841


REDUCTIONS = {
    centred: lambda x: x - x.max(1, keepdims=True) + x.sum(1, keepdims=True),
    running_sum: lambda x: np.cumsum(x, 1),
}


@pytest.mark.parametrize("application", list(REDUCTIONS), ids=lambda f: f.__name__)
def test_row_reductions_and_scans(framework, application) -> None:
    kernel = ninetoothed.make(rows, application, (Tensor(2, other=0), Tensor(2)))
    x = random_bf16(5, BLOCK)
    args = [framework.from_numpy(x), framework.poisoned(x.shape, "bfloat16")]
    (z,) = framework.call(kernel, args, {}, [1])
    assert_close(z, REDUCTIONS[application](f64(x)), "bfloat16")


def cast_tiles(x, z):
    return x.tile((BLOCK,)), z.tile((BLOCK,))


def cast(x, z):
    z = ntl.cast(x, ntl.bfloat16)  # noqa: F841


def test_float32_to_bfloat16_rounds_to_nearest_even(framework) -> None:
    """Ties, values that round up past the largest bfloat16, subnormals, infinities, NaN."""
    special = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 3 * 2**-8), 3.4e38, 1e-40, -1e-39, np.inf, np.nan]
    x = np.concatenate([special, RNG.standard_normal(29) * 10.0 ** RNG.integers(-30, 30, 29)])
    x = x.astype(np.float32)
    kernel = ninetoothed.make(cast_tiles, cast, (Tensor(1), Tensor(1, dtype=ninetoothed.bfloat16)))
    args = [framework.from_numpy(x), framework.poisoned(x.shape, "bfloat16")]
    (z,) = framework.call(kernel, args, {}, [1])
    np.testing.assert_array_equal(np.asarray(z, dtype=np.float32), bf16(x).astype(np.float32))


def test_a_user_kernels_dot_of_bfloat16_tiles(framework) -> None:
    """A user's matrix product (``ntl.dot`` on bfloat16 tiles, a float32 accumulator)."""
    kernel = ninetoothed.make(matmul.arrangement, matmul.application, matmul.tensors)
    a, b = random_bf16(20, 44), random_bf16(44, 12)
    c = framework.poisoned((20, 12), "bfloat16")
    args = [framework.from_numpy(a), framework.from_numpy(b), c]
    blocks = {"BLOCK_SIZE_M": 8, "BLOCK_SIZE_N": 8, "BLOCK_SIZE_K": 16}
    (c,) = framework.call(kernel, args, blocks, [2])
    assert_close(c, f64(a) @ f64(b), "bfloat16", matrix=True)


def exponential(x, y, z):
    z = ntl.exp(x) + y  # noqa: F841


@pytest.mark.interpreter_only  # Triton's interpreter itself
def test_triton_s_interpreter_is_left_as_it_was() -> None:
    """Only NineToothed's launches compute bfloat16 in float32: after them, a launch that
    failed among them, Triton's builder and reductions are Triton's own again."""
    import torch
    from triton.runtime import interpreter

    builder, reductions = interpreter.interpreter_builder, interpreter.ReduceScanOpInterface

    def methods() -> dict[str, Any]:  # the builder's own (its grid is data)
        return {name: value for name, value in vars(builder).items() if callable(value)}

    own, apply = methods(), reductions.__dict__["apply"]
    x = torch.from_numpy(random_bf16(37).view(np.int16)).view(torch.bfloat16)
    ninetoothed.make(tiles, add, (Tensor(1), Tensor(1), Tensor(1)))(x, x, torch.empty_like(x))
    failing = ninetoothed.make(tiles, exponential, (Tensor(1), Tensor(1), Tensor(1)))
    integers = torch.arange(37)
    with pytest.raises(Exception, match="fp32"):
        failing(integers, integers, torch.empty_like(integers))
    assert methods() == own
    assert reductions.__dict__["apply"] is apply


def libdevice_exp(x, z):
    z = ntl.libdevice.exp(x)  # noqa: F841


@pytest.mark.interpreter_only  # a GPU's libdevice takes no bfloat16: make refuses it there
def test_the_interpreters_libdevice_of_bfloat16_tiles(framework, monkeypatch) -> None:
    monkeypatch.setenv("NINETOOTHED_GPU_CHECK", "0")
    kernel = ninetoothed.make(cast_tiles, libdevice_exp, (Tensor(1), Tensor(1)))
    x = random_bf16(37) / 4
    args = [framework.from_numpy(x), framework.poisoned(x.shape, "bfloat16")]
    (z,) = framework.call(kernel, args, {}, [1])
    # Within an ulp: the reference's own rounding goes through float32.
    np.testing.assert_allclose(np.asarray(z, dtype=np.float64), np.exp(f64(x)), rtol=2**-7)
