"""The row-wise ops (softmax, rms_norm, fused_add_rms_norm) on every framework and dtype."""

from __future__ import annotations

import numpy as np
import pytest
from support.library import DTYPES, assert_close, f64, random, rounded


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    exponentials = np.exp(f64(x) - f64(x).max(axis, keepdims=True))
    return exponentials / exponentials.sum(axis, keepdims=True)


def rms_norm(x: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    normalised = f64(x) / np.sqrt((f64(x) ** 2).mean(-1, keepdims=True) + eps)
    return normalised if weight is None else normalised * f64(weight)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax(framework, ops, dtype):
    x = random((3, 5, 100), dtype, scale=4)
    result = ops.softmax(framework.from_numpy(x))
    assert_close(framework.to_numpy(result), softmax(x), dtype)


def test_softmax_along_another_dimension_of_a_strided_input(framework, ops):
    x = random((37, 6), "float32", scale=4)
    result = ops.softmax(framework.non_contiguous(x), dim=0)
    assert_close(framework.to_numpy(result), softmax(x, axis=0), "float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm(framework, ops, dtype, weighted):
    x, weight = random((2, 3, 100), dtype), random((100,), dtype)
    given = framework.from_numpy(weight) if weighted else None
    result = ops.rms_norm(framework.from_numpy(x), given, eps=1e-5)
    assert_close(framework.to_numpy(result), rms_norm(x, weight if weighted else None, 1e-5), dtype)


def test_rms_norm_of_a_strided_input(framework, ops):
    x, weight = random((64, 9), "float32"), random((9,), "float32")
    result = ops.rms_norm(framework.non_contiguous(x), framework.from_numpy(weight))
    assert_close(framework.to_numpy(result), rms_norm(x, weight, 1e-6), "float32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rms_norm(framework, ops, dtype):
    x, residual, weight = random((9, 48), dtype), random((9, 48), dtype), random((48,), dtype)
    normalised, total = ops.fused_add_rms_norm(
        framework.from_numpy(x), framework.from_numpy(residual), framework.from_numpy(weight)
    )
    expected_total = f64(rounded(f64(x) + f64(residual), dtype))
    assert_close(framework.to_numpy(total), expected_total, dtype)
    assert_close(framework.to_numpy(normalised), rms_norm(expected_total, weight, 1e-6), dtype)


def test_a_wrong_weight_is_refused(framework, ops):
    x = framework.from_numpy(random((3, 8), "float32"))
    with pytest.raises(ValueError, match=r"weight must have shape \(8,\)"):
        ops.rms_norm(x, framework.from_numpy(random((4,), "float32")))


@pytest.mark.parametrize("dim", [1.0, None, True, "1"])
def test_softmax_needs_an_int_dim(framework, ops, dim):
    x = framework.from_numpy(random((3, 8), "float32"))
    with pytest.raises(ValueError, match=r"softmax: dim must be an int, got"):
        ops.softmax(x, dim)
