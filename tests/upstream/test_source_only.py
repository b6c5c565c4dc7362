"""Parameters an application reaches only through their source tie nothing.

Upstream lets an application read and write a parameter's memory itself
(``x.source.data_ptr()``, ``x.data_ptr()``, ``x.stride(d)``); such a
parameter's arrangement never meets the grid, so its sizes neither shape the
grid nor have to agree with the other parameters'.

A lookup table passed whole (returned unarranged) and declared with a literal
size, ``Tensor(1, shape=(n,))``, is read by pointer arithmetic: the grid is
the output's, not the table's ``n`` programs.

A scatter written for upstream on top of ntops's element-wise arrangement
(every tensor flattened and tiled alike) writes its output with
``ntl.atomic_add(output.source.data_ptr() + offset, ...)`` inside a helper,
``_atomic_add(src, output, offset, valid)``.  The output is never read or
written tile by tile, so its size need not equal the index's: that of the
dimension scattered along is the caller's.  A helper that stores to the tile
does tie the sizes, and a call whose sizes differ is still refused.
"""

import functools
import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def element_wise(*tensors, block_size=16):
    return tuple(t.flatten().tile((block_size,)) if t.ndim != 0 else t for t in tensors)


def _atomic_add(src, output, target_offset, valid):
    ntl.atomic_add(output.source.data_ptr() + target_offset, src, mask=valid)


def _offset_of(output, coord_0, coord_1):
    return coord_0 * output.source.stride(0) + coord_1 * output.source.stride(1)


def scatter_add_1d(index, src, dim, output):
    valid = (src.offsets(0) < src.source.shape[0]) & (index < output.source.shape[0])
    _atomic_add(src, output, index * output.source.stride(0), valid)


def scatter_add_2d(index, src, dim, output):
    coord_0 = ntl.where(dim == 0, index, src.offsets(0))
    coord_1 = ntl.where(dim == 1, index, src.offsets(1))
    valid = (
        (src.offsets(0) < src.source.shape[0])
        & (src.offsets(1) < src.source.shape[1])
        & (coord_0 < output.source.shape[0])
        & (coord_1 < output.source.shape[1])
    )
    _atomic_add(src, output, _offset_of(output, coord_0, coord_1), valid)


def scatter_kernel(ndim):
    application = scatter_add_1d if ndim == 1 else scatter_add_2d
    tensors = (
        Tensor(ndim, other=0),
        Tensor(ndim, other=0),
        Tensor(0, constexpr=True),
        Tensor(ndim),
    )
    return ninetoothed.make(element_wise, application, tensors)


@pytest.mark.parametrize(
    "shape, dim, output_shape",
    [((37,), 0, (20,)), ((37,), 0, (50,)), ((5, 6), 0, (9, 6)), ((5, 6), 1, (5, 11))],
)
def test_scatter_through_a_helper_of_an_output_of_another_size(shape, dim, output_shape):
    src = torch.randn(shape, device=DEVICE)
    index = torch.randint(0, output_shape[dim], shape, device=DEVICE)
    output = torch.zeros(output_shape, device=DEVICE)

    scatter_kernel(len(shape))(index, src, dim, output)

    expected = torch.zeros(output_shape, device=DEVICE).scatter_add_(dim, index, src)
    torch.testing.assert_close(output, expected)


def _store(value, output):
    output = value  # noqa: F841


def copy_through_a_helper(input, output):
    _store(input * 2, output)


def test_a_helper_that_stores_to_the_tile_still_ties_the_sizes():
    kernel = ninetoothed.make(
        functools.partial(element_wise, block_size=8), copy_through_a_helper, (Tensor(1), Tensor(1))
    )
    input = torch.randn(37, device=DEVICE)
    output = torch.full_like(input, float("nan"))
    kernel(input, output)
    torch.testing.assert_close(output, input * 2)

    with pytest.raises(LaunchError, match="must have the same size"):
        kernel(input, torch.empty(40, device=DEVICE))


def gather_arrangement(output, index, table, block_size=8):
    return output.tile((block_size,)), index.tile((block_size,)), table


def gather_by_pointer(output, index, table):
    output = ntl.load(table.data_ptr() + index * table.stride(0))  # noqa: F841


@pytest.mark.parametrize("size, count", [(7, 37), (12, 5), (40, 3)])
def test_a_table_read_by_pointer_does_not_set_the_grid(size, count):
    tensors = (Tensor(1), Tensor(1), Tensor(1, shape=(size,)))
    kernel = ninetoothed.make(gather_arrangement, gather_by_pointer, tensors)
    table = torch.randn(size, device=DEVICE)
    index = torch.randint(0, size, (count,), device=DEVICE)
    output = torch.full((count,), float("nan"), device=DEVICE)

    kernel(output, index, table)

    torch.testing.assert_close(output, table[index])
