"""Reaching the source tensor from an application: ``x.source[...]``, ``data_ptr``, ``stride``.

Upstream lets an application gather from and scatter to the unarranged tensor
with index expressions (``x.source[rows, cols]``, masked by the source's
bounds), take its base pointer (``x.source.data_ptr()``) and its strides
(``x.source.stride(d)``; ``x.data_ptr()`` and ``x.stride(d)`` of the
arranged parameter are the same) for hand-written pointer arithmetic.
"""

import functools
import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def arrangement(
    input, output, BLOCK_SIZE_M=ninetoothed.block_size(), BLOCK_SIZE_N=ninetoothed.block_size()
):
    tile_shape = (BLOCK_SIZE_M, BLOCK_SIZE_N)

    return input.tile(tile_shape), output.tile(tile_shape)


def copy(input, output):
    output = input


def gather(input, output):
    output = input.source[input.offsets(0)[:, None], input.offsets(1)[None, :]]


def load_by_pointer(input, output):
    output = ntl.load(
        input.source.data_ptr()
        + input.offsets(0)[:, None] * input.source.stride(0)
        + input.offsets(1)[None, :] * input.source.stride(1)
    )


def load_by_the_tiles_pointer(input, output):
    # Upstream: a parameter's data_ptr() and stride(d) are its source tensor's.
    output = ntl.load(
        input.data_ptr()
        + input.offsets(0)[:, None] * input.stride(0)
        + input.offsets(1)[None, :] * input.stride(1)
    )


def scatter_transposed(input, output):
    output.source[input.offsets(1)[None, :], input.offsets(0)[:, None]] = input


def strided_input(rows, cols):
    """A (rows, cols) view with row stride cols + 7 and column stride 2."""
    base = torch.randn(rows, 2 * (cols + 7), device=DEVICE)
    return base[:, ::2][:, :cols]


def clone(application, input, output):
    arranged = functools.partial(arrangement, BLOCK_SIZE_M=16, BLOCK_SIZE_N=8)
    kernel = ninetoothed.make(arranged, application, (Tensor(2), Tensor(2)))
    kernel(input, output)


@pytest.mark.parametrize(
    "application",
    [
        copy,
        gather,
        load_by_pointer,
        load_by_the_tiles_pointer,
    ],
)
def test_clone(application):
    input = strided_input(41, 29)
    output = torch.full((41, 29), float("nan"), device=DEVICE)

    clone(application, input, output)

    torch.testing.assert_close(output, input)


def test_transpose_by_scattering_into_the_source():
    input = torch.randn(41, 29, device=DEVICE)
    output = torch.full((29, 41), float("nan"), device=DEVICE)

    clone(scatter_transposed, input, output)

    torch.testing.assert_close(output, input.T)


def sum_arrangement(input, output, BLOCK_SIZE=64):
    input_arranged = input.tile((BLOCK_SIZE,))
    output_arranged = output.tile((-1,)).expand(input_arranged.shape)

    return input_arranged, output_arranged


def sum_application(input, output):
    ntl.atomic_add(output.source.data_ptr(), ntl.sum(input))


def test_sum_by_atomic_adds_to_the_source_pointer():
    tensors = (Tensor(1), Tensor(1, shape_options={"constexpr": True}))
    kernel = ninetoothed.make(sum_arrangement, sum_application, tensors)
    input = torch.randn(1000, device=DEVICE)
    output = torch.zeros(1, device=DEVICE)

    kernel(input, output)

    torch.testing.assert_close(output[0], input.sum(), rtol=1e-5, atol=1e-4)


def row_arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    # Tiles one row high: source dimension 0 is a tile dimension of size 1.
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def row_gather(input, output):
    output = input.source[input.offsets(0)[:, None], input.offsets(1)[None, :]] * 2


def row_scatter(input, output):
    output.source[output.offsets(0)[:, None], output.offsets(1)[None, :]] = input * 2


@pytest.mark.parametrize("application", [row_gather, row_scatter])
def test_offsets_along_a_tile_dimension_of_size_1(application):
    # Upstream's x.offsets(0) of a (1, n) tile is tl.arange(0, 1) plus the row:
    # a vector of one element, which [:, None] makes (1, 1).
    arranged = functools.partial(row_arrangement, BLOCK_SIZE=8)
    kernel = ninetoothed.make(arranged, application, (Tensor(2), Tensor(2)))
    input = strided_input(5, 29)
    output = torch.full((5, 29), float("nan"), device=DEVICE)

    kernel(input, output)

    torch.testing.assert_close(output, input * 2)


def row_sum_arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, BLOCK_SIZE)), output.tile((1,))


def row_sum_into_the_source(input, output):
    # ntl.sum(input, 1) has shape (1,), as has output.offsets(0) of a (1,) tile.
    output.source[output.offsets(0)] = ntl.sum(input, 1)


def test_store_of_a_reduction_at_offsets_of_a_tile_of_size_1():
    tensors = (Tensor(2, other=0), Tensor(1))
    arranged = functools.partial(row_sum_arrangement, BLOCK_SIZE=32)
    kernel = ninetoothed.make(arranged, row_sum_into_the_source, tensors)
    input = strided_input(7, 29)
    output = torch.full((7,), float("nan"), device=DEVICE)

    kernel(input, output)

    expected = input.double().sum(1).to(input.dtype)
    torch.testing.assert_close(output, expected, rtol=1e-5, atol=1e-5)
