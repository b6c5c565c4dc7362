"""Tiles whose size is only known at run time, as upstream runs them.

``x.tile((1, -1))`` of a tensor whose sizes are not constexpr makes a tile
as wide as the call's row.  Upstream passes the next power of two of that
size as a constexpr and masks the padding (ntops.lab's ``addmv`` and
``vdot`` are written so); here the host computes the same padded size per
call (one compiled kernel per power of two).  Checked on every framework
against float64 references with poisoned outputs, at widths that are and are
not powers of two (1, 7, 16, 100) and with several programs along the rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.library import assert_close, f64, random

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor, block_size

WIDTHS = [1, 7, 16, 100]


def row_arrangement(x, y):
    return x.tile((1, -1)), y.tile((1, -1))


def scaled_by_row_mean(x, y):
    y = x * (ntl.sum(x) / x.shape[-1])  # noqa: F841


def matrix_vector_arrangement(a, x, y, BLOCK_M=block_size()):  # noqa: B008
    a_tiles = a.tile((BLOCK_M, -1))
    return a_tiles, x.tile((-1,)).expand((a_tiles.shape[0],)), y.tile((BLOCK_M,))


def matrix_vector(a, x, y):
    y = ntl.sum(a * x, axis=1)  # noqa: F841


ROWS = ninetoothed.make(row_arrangement, scaled_by_row_mean, (Tensor(2), Tensor(2)))
MV = ninetoothed.make(matrix_vector_arrangement, matrix_vector, (Tensor(2), Tensor(1), Tensor(1)))


@pytest.mark.parametrize("width", WIDTHS)
def test_a_whole_row_per_program(framework, width):
    x = random((5, width), "float32")
    y = framework.poisoned(x.shape, "float32")
    (result,) = framework.call(ROWS, [framework.non_contiguous(x), y], {}, [1])
    expected = f64(x) * f64(x).mean(axis=1, keepdims=True)
    assert_close(result, expected, "float32")


@pytest.mark.parametrize("width", [*WIDTHS, 0])
def test_matrix_vector_with_a_run_time_row(framework, width):
    a, x = random((37, width), "float32"), random((width,), "float32")
    y = framework.poisoned((37,), "float32")
    args = [framework.from_numpy(a), framework.from_numpy(x), y]
    (result,) = framework.call(MV, args, {"BLOCK_M": 16}, [2])
    expected = f64(a) @ f64(x) if width else np.zeros(37)
    assert_close(result, expected, "float32", matrix=True)
