"""Kernels that mix integer index tensors with float data, no dtypes declared.

An embedding lookup or a KV-cache store reads row numbers from one tensor and
addresses another with them (``table[row]``).  Nothing in ``Tensor(2)``
says which tensor holds integers, so no single element type fits them all;
the kernel compiles for a GPU with the call's own types (int64 indices,
float data), as upstream's does on the GPU.  Sizes are constexpr, as
upstream needs for the whole-row tiles (``-1``).
"""

import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def rows_arrangement(index, table, output):
    # One program per index: the whole table, whose rows it picks, and its output row.
    count = index.shape[0]
    table_arranged = table.tile((1, -1)).squeeze((1,)).tile((-1,)).expand((count,))
    table_arranged.dtype.dtype = table_arranged.dtype.dtype.squeeze((0,))
    output_arranged = output.tile((1, -1)).squeeze((1,))
    output_arranged.dtype = output_arranged.dtype.squeeze((0,))
    return index.tile((1,)), table_arranged, output_arranged


def exp_of_rows_application(index, table, output):
    row = index
    output = ntl.exp(table[row])  # noqa: F841


def scatter_arrangement(index, source, table):
    count = index.shape[0]
    source_arranged = source.tile((1, -1)).squeeze((1,))
    source_arranged.dtype = source_arranged.dtype.squeeze((0,))
    table_arranged = table.tile((1, -1)).squeeze((1,)).tile((-1,)).expand((count,))
    table_arranged.dtype.dtype = table_arranged.dtype.dtype.squeeze((0,))
    return index.tile((1,)), source_arranged, table_arranged


def scaled_scatter_application(index, source, table):
    row = index
    table[row] = ntl.sigmoid(source) * 2.0


def constexpr_tensors(*ndims):
    return tuple(Tensor(ndim, shape_options={"constexpr": True}) for ndim in ndims)


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_exp_of_gathered_rows(index_dtype):
    tensors = constexpr_tensors(1, 2, 2)
    kernel = ninetoothed.make(rows_arrangement, exp_of_rows_application, tensors)
    index = torch.tensor([4, 0, 10, 4, 7, 2, 9], dtype=index_dtype, device=DEVICE)
    table = torch.randn(11, 12, device=DEVICE)
    output = torch.full((7, 12), float("nan"), device=DEVICE)

    kernel(index, table, output)

    torch.testing.assert_close(output, table.double()[index.long()].exp().float())


def test_scatter_of_computed_rows():
    tensors = constexpr_tensors(1, 2, 2)
    kernel = ninetoothed.make(scatter_arrangement, scaled_scatter_application, tensors)
    index = torch.tensor([5, 1, 12, 8, 0], device=DEVICE)
    source = torch.randn(5, 6, device=DEVICE)
    table = torch.full((13, 6), float("nan"), device=DEVICE)
    expected = table.clone()
    expected[index] = (torch.sigmoid(source.double()) * 2).float()

    kernel(index, source, table)

    torch.testing.assert_close(table, expected, equal_nan=True)
