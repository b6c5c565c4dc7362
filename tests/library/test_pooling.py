"""max_pool2d on every framework and dtype, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from support.library import DTYPES, assert_close, f64, random


def max_pool2d(x: np.ndarray, window, stride, padding) -> np.ndarray:
    padded = np.pad(
        f64(x),
        ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2),
        constant_values=-np.inf,
    )
    windows = np.lib.stride_tricks.sliding_window_view(padded, window, axis=(2, 3))
    return windows[:, :, :: stride[0], :: stride[1]].max(axis=(-2, -1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d(framework, ops, dtype):
    x = random((2, 3, 11, 13), dtype)
    result = ops.max_pool2d(framework.from_numpy(x), 3, stride=2, padding=1)
    assert_close(framework.to_numpy(result), max_pool2d(x, (3, 3), (2, 2), (1, 1)), dtype)


@pytest.mark.parametrize(("window", "stride", "padding"), [(2, None, 0), ((3, 2), (1, 2), (1, 0))])
def test_max_pool2d_options(framework, ops, window, stride, padding):
    x = random((1, 2, 9, 10), "float32")
    result = ops.max_pool2d(framework.non_contiguous(x), window, stride, padding)
    pairs = [(v, v) if isinstance(v, int) else v for v in (window, stride or window, padding)]
    assert_close(framework.to_numpy(result), max_pool2d(x, *pairs), "float32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_propagates_nan(framework, ops, dtype):
    """A window holding NaN gives NaN, as torch's does, wherever the NaN lies in it."""
    x = random((1, 2, 6, 7), dtype)
    for n, c, h, w in [(0, 0, 0, 0), (0, 0, 3, 5), (0, 1, 4, 1), (0, 1, 5, 6)]:
        x[n, c, h, w] = np.nan
    result = framework.to_numpy(ops.max_pool2d(framework.from_numpy(x), 3, stride=2, padding=1))
    expected = max_pool2d(x, (3, 3), (2, 2), (1, 1))
    assert np.isnan(expected).sum() >= 4
    np.testing.assert_array_equal(np.isnan(result), np.isnan(expected))
    finite = ~np.isnan(expected)
    assert_close(result[finite], expected[finite], dtype)
