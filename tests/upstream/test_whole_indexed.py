"""Parameters returned unchanged and indexed element by element: the whole tensor.

Upstream reads ``x[i, j]`` of a tensor the arrangement returned unchanged
(``return x, y``) as the element ``(i, j)`` of the whole tensor, loads and
stores alike; ntops's corrcoef loops over a matrix this way.  Such a
parameter is ``x.source[i, j]`` here: it takes no part in the grid (the
grid is that of the tiled parameters, or the first tensor's when none is).
"""

import functools
import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def unchanged(x, out, rows, cols):
    return x, out, rows, cols


def gram(x, out, rows, cols):
    # out[i, j] = sum_k x[i, k] * x[j, k]; the lower triangle copies the upper one,
    # read back from out itself as the program wrote it.
    for i in range(rows):
        for j in range(rows):
            if j < i:
                out[i, j] = out[j, i]
            else:
                acc = ntl.zeros((), dtype=ntl.float32)
                for k in range(cols):
                    acc += x[i, k].to(ntl.float32) * x[j, k].to(ntl.float32)
                out[i, j] = acc


@pytest.mark.parametrize("rows, cols", [(3, 7), (1, 3), (5, 2)])
def test_matrix_indexed_element_by_element(rows, cols):
    tensors = (
        Tensor(2),
        Tensor(2),
        Tensor(0, constexpr=True, value=rows),
        Tensor(0, constexpr=True, value=cols),
    )
    kernel = ninetoothed.make(unchanged, gram, tensors)
    x = torch.randn(rows, cols, device=DEVICE)
    out = torch.full((rows, rows), float("nan"), device=DEVICE)

    kernel(x, out, rows, cols)

    torch.testing.assert_close(out, x @ x.T, rtol=1e-5, atol=1e-5)


def tiled_with_table(x, table, out, block_size):
    return x.tile((block_size,)), table, out.tile((block_size,))


def scale_by_table(x, table, out):
    out = x * table[2] + table[0]  # noqa: F841


def test_unchanged_table_beside_tiled_tensors():
    arrangement = functools.partial(tiled_with_table, block_size=16)
    kernel = ninetoothed.make(arrangement, scale_by_table, (Tensor(1), Tensor(1), Tensor(1)))
    x = torch.randn(77, device=DEVICE)  # 5 programs, the last one ragged
    table = torch.randn(4, device=DEVICE)
    out = torch.full_like(x, float("nan"))

    kernel(x, table, out)

    torch.testing.assert_close(out, x * table[2] + table[0])


def copy(x, y):
    y = x  # noqa: F841


def test_unchanged_and_used_whole_is_still_one_element_per_program():
    kernel = ninetoothed.make(lambda x, y: (x, y), copy, (Tensor(2), Tensor(2)))
    x = torch.randn(5, 7, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y, x)
