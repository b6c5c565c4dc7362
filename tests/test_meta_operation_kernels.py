"""Meta-operations checked through kernels, against numpy, on every framework.

The property tests of ``nt-core`` compare meta-operations with the shared
evaluator, which reads the same bindings code generation reads: a wrong
binding passes there.  Here each meta-operation runs in a small kernel whose
result is computed independently with numpy: dilation and strided windows,
``floor_mode``, ``pad`` (and cropping), ``expand``, ``expand_as``, a squeeze
of a negative dim and of every literal singleton (``squeeze()``), ``flatten()``
of a strided vector, and tiles whose sizes are not powers of two.  Every shape is a grid of
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


# -- expand, then a sum over the broadcast rows ------------------------------
# A tile whose pointers do not vary along a dimension is loaded once along the
# others and broadcast (nt_triton._codegen.memory.Spread); its lanes past the
# source's rows must still hold the fill value, as a masked load's do: summing
# over the rows shows them.
ROWS, COLUMNS = 4, 8


def rows_summed(bias, x, y):
    expanded = bias.expand((x.shape[0], -1))
    return expanded.tile((ROWS, COLUMNS)), x.tile((ROWS, COLUMNS)), y.tile((1, COLUMNS))


def sum_rows(bias, x, y):
    y = ntl.sum(bias + x, 0)[None, :]  # noqa: F841


SUM_ROWS_KERNELS = {
    other: ninetoothed.make(rows_summed, sum_rows, (Tensor(2, other=other), Tensor(2), Tensor(2)))
    for other in (None, 1.5)
}
"""Per fill value of ``bias`` (None: no ``other``, so zeros): a kernel summing each
tile's rows of ``bias + x``."""


@pytest.mark.parametrize("other", list(SUM_ROWS_KERNELS))
@pytest.mark.parametrize("shape", [(9, 21), (1, 3), (8, 16), (13, 1)])
def test_broadcast_tile_lanes_past_the_rows_hold_the_fill(framework, other, shape):
    rows, columns = shape
    x, bias = random(*shape), random(1, columns)
    tiles = -(-rows // ROWS)
    expected = np.zeros((tiles, columns))
    for tile in range(tiles):
        block = slice(tile * ROWS, min((tile + 1) * ROWS, rows))
        past = ROWS - (block.stop - block.start)  # lanes past the rows: the fill, x's zeros
        expected[tile] = (bias.astype(np.float64) + x[block]).sum(0) + past * (other or 0.0)
    args = [
        framework.non_contiguous(bias),
        framework.from_numpy(x),
        framework.poisoned((tiles, columns), "float32"),
    ]
    (y,) = framework.call(SUM_ROWS_KERNELS[other], args, {}, outputs=[2])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def through_rows(x, bias, y):
    rows = (x.shape[0], -1)
    tile = (ROWS, COLUMNS)
    return x.tile(tile), bias.expand(rows).tile(tile), y.expand(rows).tile(tile)


def doubled(x, bias, y):
    y = bias + bias + 0 * x  # noqa: F841  (every row of tiles stores the same values)


THROUGH_ROWS_KERNEL = ninetoothed.make(through_rows, doubled, (Tensor(2), Tensor(2), Tensor(2)))


@pytest.mark.parametrize("shape", [(9, 21), (1, 3), (8, 16)])
def test_store_through_a_broadcast_tile(framework, shape):
    """A stored tile whose pointers do not vary along its rows: its store takes the
    broadcast pointers and both halves of the mask (the rows' and the columns')."""
    x, bias = random(*shape), random(1, shape[1])
    args = [
        framework.from_numpy(x),
        framework.from_numpy(bias),
        framework.poisoned((1, shape[1]), "float32"),
    ]
    (y,) = framework.call(THROUGH_ROWS_KERNEL, args, {}, outputs=[2])
    np.testing.assert_allclose(y, 2 * bias.astype(np.float64), rtol=1e-6)


# A bias read only element-wise into the output's store, under the output's own row
# bound, takes no fill select (nt_triton._codegen.unselected); expanded to another
# tensor's rows (of the same size: the launch checks it), it keeps the select.  The
# fill would show in the lanes past the rows if a store reached them.
FILL = 7.0


def bias_rows(bound_by_output):
    def arrangement(x, bias, y):
        expanded = bias.expand_as(y) if bound_by_output else bias.expand((x.shape[0], -1))
        tile = (ROWS, COLUMNS)
        return x.tile(tile), expanded.tile(tile), y.tile(tile)

    return arrangement


def add_rows(x, bias, y):
    y = x + 2 * bias  # noqa: F841


BIAS_ROWS_KERNELS = {
    bound: ninetoothed.make(
        bias_rows(bound), add_rows, (Tensor(2), Tensor(shape=(1, None), other=FILL), Tensor(2))
    )
    for bound in (True, False)
}


@pytest.mark.parametrize("bound_by_output", [True, False])
@pytest.mark.parametrize("shape", [(9, 21), (1, 3), (8, 16)])
def test_a_bias_row_added_to_rows_no_tile_divides(framework, bound_by_output, shape):
    rows, columns = shape
    x, bias = random(rows, columns), random(1, columns)
    expected = x.astype(np.float64) + 2 * bias.astype(np.float64)
    args = [
        framework.from_numpy(x),
        framework.from_numpy(bias),
        framework.poisoned((rows, columns), "float32"),
    ]
    (y,) = framework.call(BIAS_ROWS_KERNELS[bound_by_output], args, {}, outputs=[2])
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


# -- expand_as: broadcasting, as numpy ----------------------------------------
def broadcast_add(x, bias, y):
    tile = (2, 4, 8)
    return x.tile(tile), bias.expand_as(y).tile(tile), y.tile(tile)


EXPAND_AS_KERNELS = {
    pattern: ninetoothed.make(broadcast_add, add, (Tensor(3), Tensor(shape=pattern), Tensor(3)))
    for pattern in [(1, None), (None, 1, None), (None,)]
}
"""Per declared shape of ``bias`` (1: a broadcast dimension): a kernel adding it to ``x``."""


@pytest.mark.parametrize("pattern", list(EXPAND_AS_KERNELS))
@pytest.mark.parametrize("shape", [(3, 5, 21), (1, 1, 1), (2, 9, 8)])
def test_expand_as(framework, pattern, shape):
    x = random(*shape)
    leading = len(shape) - len(pattern)
    bias_shape = tuple(1 if size == 1 else shape[leading + d] for d, size in enumerate(pattern))
    bias = random(*bias_shape)
    args = [
        framework.from_numpy(x),
        framework.non_contiguous(bias),
        framework.poisoned(shape, "float32"),
    ]
    (y,) = framework.call(EXPAND_AS_KERNELS[pattern], args, {}, outputs=[2])
    np.testing.assert_allclose(y, x.astype(np.float64) + bias, rtol=1e-6)


def test_expand_as_keeps_symbolic_sizes_checked(framework):
    """A size that stays symbolic is compared with the output's at the call."""
    x, bias = random(3, 5, 21), random(1, 20)
    args = [
        framework.from_numpy(x),
        framework.from_numpy(bias),
        framework.poisoned((3, 5, 21), "float32"),
    ]
    pattern = r"'bias' \(shape \(1, 20\), dimension 1: 20\) must have the same size"
    with pytest.raises(ValueError, match=pattern):
        framework.call(EXPAND_AS_KERNELS[(1, None)], args, {}, outputs=[2])


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


# -- squeeze() of every literal singleton: a middle column per program ---------
def middle_columns(x, y):
    def arranged(tensor):
        tiled = tensor.tile((1, 4, 1))
        tiled.dtype = tiled.dtype.squeeze()
        return tiled

    return arranged(x), arranged(y)


def plus_running_sum(x, y):
    y = x + ntl.cumsum(x, 0)  # noqa: F841  (along the column only if the tile is 1-D)


SQUEEZE_ALL_KERNEL = ninetoothed.make(middle_columns, plus_running_sum, (Tensor(3), Tensor(3)))


@pytest.mark.parametrize("shape", [(2, 9, 3), (1, 4, 1)])
def test_squeeze_without_dim(framework, shape):
    x = random(*shape)
    args = [framework.non_contiguous(x), framework.poisoned(shape, "float32")]
    (y,) = framework.call(SQUEEZE_ALL_KERNEL, args, {}, outputs=[1])
    chunks = np.split(x.astype(np.float64), range(4, shape[1], 4), axis=1)
    expected = x + np.concatenate([np.cumsum(chunk, axis=1) for chunk in chunks], axis=1)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


# -- flatten() of a strided vector ---------------------------------------------
def flat_vector(x, y):
    return x.flatten().tile((4,)), y.flatten().tile((4,))


FLATTEN_KERNEL = ninetoothed.make(flat_vector, double, (Tensor(1), Tensor(1)))


@pytest.mark.parametrize("size", [1, 13])
def test_flatten_of_a_vector(framework, size):
    x = random(size)
    args = [framework.non_contiguous(x), framework.poisoned((size,), "float32")]
    (y,) = framework.call(FLATTEN_KERNEL, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, 2 * x)


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
