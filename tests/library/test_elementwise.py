"""The element-wise ops (add, silu, swiglu) on every framework and dtype, against float64."""

from __future__ import annotations

import numpy as np
import pytest
from support.library import DTYPES, assert_close, f64, random


def silu(x: np.ndarray) -> np.ndarray:
    return f64(x) / (1 + np.exp(-f64(x)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_add(framework, ops, dtype):
    x, y = random((7, 45), dtype), random((7, 45), dtype)
    result = ops.add(framework.from_numpy(x), framework.from_numpy(y))
    assert_close(framework.to_numpy(result), f64(x) + f64(y), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu(framework, ops, dtype):
    x = random((300,), dtype, scale=3)
    result = ops.silu(framework.from_numpy(x))
    assert_close(framework.to_numpy(result), silu(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu(framework, ops, dtype):
    a, b = random((5, 3, 21), dtype), random((5, 3, 21), dtype)
    result = ops.swiglu(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) * silu(b), dtype)


@pytest.mark.parametrize(("a_shape", "b_shape"), [((6, 1, 17), (5, 17)), ((3, 17), (17,))])
def test_broadcasting(framework, ops, a_shape, b_shape):
    a, b = random(a_shape, "float32"), random(b_shape, "float32")
    result = ops.add(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) + f64(b), "float32")
    result = ops.swiglu(framework.from_numpy(a), framework.from_numpy(b))
    assert_close(framework.to_numpy(result), f64(a) * silu(b), "float32")


def test_strided_inputs(framework, ops):
    x, y = random((9, 40), "float16"), random((9, 40), "float16")
    result = ops.add(framework.non_contiguous(x), framework.from_numpy(y))
    assert_close(framework.to_numpy(result), f64(x) + f64(y), "float16")
    assert_close(framework.to_numpy(ops.silu(framework.non_contiguous(x))), silu(x), "float16")


def test_a_mismatch_is_refused(framework, ops):
    x = framework.from_numpy(random((3, 4), "float32"))
    with pytest.raises(ValueError, match="do not broadcast"):
        ops.add(x, framework.from_numpy(random((5,), "float32")))
    with pytest.raises(ValueError, match="one dtype"):
        ops.add(x, framework.from_numpy(random((3, 4), "float16")))
