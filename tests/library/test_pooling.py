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
