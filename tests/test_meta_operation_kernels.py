"""Meta-operations checked through kernels, against numpy, on every framework.

The property tests of ``nt-core`` compare meta-operations with the shared
evaluator, which reads the same bindings code generation reads: a wrong
binding passes there.  Here each meta-operation runs in a small kernel whose
result is computed independently with numpy: dilation and strided windows,
``floor_mode``, ``pad`` (and cropping), ``expand``, a squeeze of a negative
dim, and tiles whose sizes are not powers of two.  Every shape is a grid of
several programs with ragged last tiles; outputs are poisoned first.
"""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

RNG = np.random.default_rng()


def random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


# -- dilation, strides, floor_mode, a tile of 3 -------------------------------
WINDOW, STEP, DILATION = 3, 2, 2


def windows(x, y, floor_mode=False):
    arranged = x.tile((WINDOW,), strides=(STEP,), dilation=(DILATION,), floor_mode=floor_mode)
    return arranged, y.tile((1,))


def window_sum(x, y):
    y = ntl.sum(x, 0)  # noqa: F841


def floored_windows(x, y):
    return windows(x, y, floor_mode=True)


WINDOW_KERNELS = {
    False: ninetoothed.make(windows, window_sum, (Tensor(1, other=0), Tensor(1))),
    True: ninetoothed.make(floored_windows, window_sum, (Tensor(1, other=0), Tensor(1))),
}


def window_sums(x: np.ndarray, floor_mode: bool) -> np.ndarray:
    """Windows of 3 elements 2 apart, starting every 2; the last may stick out (zeros)."""
    span = DILATION * (WINDOW - 1) + 1
    count = (len(x) - span + (0 if floor_mode else STEP - 1)) // STEP + 1
    padded = np.concatenate([x.astype(np.float64), np.zeros(span)])
    return np.array(
        [sum(padded[w * STEP + j * DILATION] for j in range(WINDOW)) for w in range(count)]
    )


@pytest.mark.parametrize("floor_mode", [False, True])
@pytest.mark.parametrize("size", [5, 23, 24])
def test_dilated_strided_windows(framework, floor_mode, size):
    x = random(size)
    expected = window_sums(x, floor_mode)
    args = [framework.from_numpy(x), framework.poisoned(expected.shape, "float32")]
    (y,) = framework.call(WINDOW_KERNELS[floor_mode], args, {}, outputs=[1])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


# -- pad and crop -------------------------------------------------------------
PADDINGS = [((2, 3), (1, 0)), ((0, 1), (3, 2)), ((-1, 2), (1, -2))]
"""(before, after) per dimension; negative amounts crop."""


def pad_kernel(padding):
    def arrangement(x, y):
        return x.pad(padding).tile((4, 3)), y.tile((4, 3))

    def application(x, y):
        y = x  # noqa: F841

    return ninetoothed.make(arrangement, application, (Tensor(2, other=-7.5), Tensor(2)))


PAD_KERNELS = {padding: pad_kernel(padding) for padding in PADDINGS}


@pytest.mark.parametrize("padding", PADDINGS)
def test_pad(framework, padding):
    x = random(9, 7)
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(padding))
    grow = [(max(b, 0), max(a, 0)) for b, a in padding]
    expected = np.pad(x[crop], grow, constant_values=-7.5)
    args = [framework.from_numpy(x), framework.poisoned(expected.shape, "float32")]
    (y,) = framework.call(PAD_KERNELS[padding], args, {}, outputs=[1])
    np.testing.assert_array_equal(y, expected)


# -- expand ------------------------------------------------------------------
def row_broadcast(x, bias, y):
    tile = (4, 8)
    expanded = bias.expand((x.shape[0], -1))
    return x.tile(tile), expanded.tile(tile), y.tile(tile)


def add(x, bias, y):
    y = x + bias  # noqa: F841


EXPAND_KERNEL = ninetoothed.make(row_broadcast, add, (Tensor(2), Tensor(2), Tensor(2)))


@pytest.mark.parametrize("shape", [(1, 3), (9, 21)])
def test_expand(framework, shape):
    x, bias = random(*shape), random(1, shape[1])
    args = [
        framework.from_numpy(x),
        framework.from_numpy(bias),
        framework.poisoned(shape, "float32"),
    ]
    (y,) = framework.call(EXPAND_KERNEL, args, {}, outputs=[2])
    np.testing.assert_allclose(y, x.astype(np.float64) + bias, rtol=1e-6)


def test_expand_needs_a_dimension_of_one(framework):
    x, bias = random(9, 21), random(2, 21)
    args = [
        framework.from_numpy(x),
        framework.from_numpy(bias),
        framework.poisoned((9, 21), "float32"),
    ]
    with pytest.raises(ValueError, match="expand.*must have size 1"):
        framework.call(EXPAND_KERNEL, args, {}, outputs=[2])


# -- squeeze of a negative dim -------------------------------------------------
def column(x, y):
    arranged = x.tile((4, 1))
    arranged.dtype = arranged.dtype.squeeze(-1)
    return arranged.squeeze(-1), y.tile((4,))


def double(x, y):
    y = 2 * x  # noqa: F841


SQUEEZE_KERNEL = ninetoothed.make(column, double, (Tensor(2), Tensor(1)))


@pytest.mark.parametrize("rows", [1, 13])
def test_squeeze_of_a_negative_dim(framework, rows):
    x = random(rows, 1)
    args = [framework.from_numpy(x), framework.poisoned((rows,), "float32")]
    (y,) = framework.call(SQUEEZE_KERNEL, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, 2 * x[:, 0])


# -- tiles that are not powers of two ------------------------------------------
def odd_tiles(x, y):
    return x.tile((3, 5)), y.tile((3, 5))


def shifted(x, y):
    y = x + 1  # noqa: F841


ODD_TILES_KERNEL = ninetoothed.make(odd_tiles, shifted, (Tensor(2), Tensor(2)))


@pytest.mark.parametrize("shape", [(1, 1), (10, 11), (3, 5)])
def test_tiles_that_are_not_powers_of_two(framework, shape):
    x = random(*shape)
    args = [framework.non_contiguous(x), framework.poisoned(shape, "float32")]
    (y,) = framework.call(ODD_TILES_KERNEL, args, {}, outputs=[1])
    np.testing.assert_allclose(y, x.astype(np.float64) + 1, rtol=1e-6)
