"""Constructs of the kernels in InfiniTensor's ntops.lab, an operator lab for upstream.

Each test is a minimal program of our own for one construct those kernels
use and upstream runs: squeezing a tile dimension that ``expand`` made (every
index reads the same element, so upstream's index 0 stands for all of them);
outermost shapes where each of two tensors has a literal 1 and the other a
size of the arguments (fold's ``(B, 1, L // 8)`` against ``(B, C // 4, 1)``),
checked at launch; a local annotated ``ntl.constexpr`` in a helper (its
conv2d picks ``input_precision`` so); and the offsets of one element of a tile,
``x[i].offsets(-1)`` (its upsample_linear1d and chunked cumsum mask with them).
"""

import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def row_sum_arrangement(x, out, BLOCK_SIZE_M=4):
    """Blocks of whole rows; ``out`` broadcast along the row, then the broadcast
    dimension of its tile squeezed (its size is the row length, a symbol)."""
    out_arranged = out.unsqueeze(1).expand((-1, x.shape[1])).tile((BLOCK_SIZE_M, -1))
    out_arranged.dtype = out_arranged.dtype.squeeze(1)
    return x.tile((BLOCK_SIZE_M, -1)), out_arranged


def row_sum(x, out):
    out = ntl.sum(x, axis=1)  # noqa: F841


@pytest.mark.parametrize("shape", [(13, 7), (16, 1), (3, 20)])
def test_squeezing_a_broadcast_tile_dimension(shape):
    tensors = (Tensor(2, shape_options={"constexpr": True}), Tensor(1))
    kernel = ninetoothed.make(row_sum_arrangement, row_sum, tensors)
    x = torch.randn(shape, device=DEVICE)
    out = torch.full((shape[0],), float("nan"), device=DEVICE)

    kernel(x, out)

    torch.testing.assert_close(out, x.double().sum(1).float())


def test_squeezing_a_broadcast_dimension_of_literal_size():
    def arrangement(x, out):
        out_arranged = out.unsqueeze(1).expand((-1, 6)).tile((2, 6))
        out_arranged.dtype = out_arranged.dtype.squeeze(1)
        return x.tile((2, 6)), out_arranged

    tensors = (Tensor(shape=(None, 6)), Tensor(1))
    kernel = ninetoothed.make(arrangement, row_sum, tensors)
    x = torch.randn(9, 6, device=DEVICE)
    out = torch.full((9,), float("nan"), device=DEVICE)

    kernel(x, out)

    torch.testing.assert_close(out, x.double().sum(1).float())


def test_squeezing_a_dimension_that_is_read_is_still_refused():
    """Only broadcast dimensions are exempt: a tile dimension along the source
    would read its first element only (upstream does; we refuse)."""
    with pytest.raises(ninetoothed.errors.MetaOperationError, match="has size 6, not 1"):
        Tensor(shape=(None, 6), name="x").tile((2, 6)).dtype.squeeze(1)


CHANNELS, LENGTH = 4, 8


def scatter_arrangement(x, index, out):
    """``out[b, c] = sum of x[b, l] where index[l] == c``, one program per row:
    each channel reads the whole row, each position all the channels."""
    x_arranged = x[:, None, :].expand((-1, CHANNELS, -1)).tile((1, CHANNELS, LENGTH))
    index_arranged = index[None, None, :].expand((x.shape[0], CHANNELS, -1))
    index_arranged = index_arranged.tile((1, CHANNELS, LENGTH))
    out_arranged = out.unsqueeze(2).expand((-1, -1, LENGTH)).tile((1, CHANNELS, LENGTH))
    out_arranged.dtype = out_arranged.dtype.squeeze(2)
    return x_arranged, index_arranged, out_arranged


def scatter_sum(x, index, out):
    channels = ntl.arange(0, CHANNELS)[None, :, None]
    out = ntl.sum(ntl.where(index == channels, x, 0.0), axis=2)  # noqa: F841


def scatter_reference(x, index):
    return torch.stack([(x * (index == c)).sum(1) for c in range(CHANNELS)], dim=1)


def test_literal_ones_crossed_with_sizes_of_the_arguments():
    kernel = ninetoothed.make(scatter_arrangement, scatter_sum, (Tensor(2), Tensor(1), Tensor(2)))
    x = torch.randn(5, LENGTH, device=DEVICE)
    index = torch.randint(0, CHANNELS, (LENGTH,), device=DEVICE)
    out = torch.full((5, CHANNELS), float("nan"), device=DEVICE)

    kernel(x, index, out)

    torch.testing.assert_close(out, scatter_reference(x, index))


@pytest.mark.parametrize("length, channels", [(2 * LENGTH, CHANNELS), (LENGTH, 2 * CHANNELS)])
def test_crossed_ones_that_do_not_fit_are_refused_at_launch(length, channels):
    """Sizes the literal 1s do not cover would leave elements out: a launch error."""
    kernel = ninetoothed.make(scatter_arrangement, scatter_sum, (Tensor(2), Tensor(1), Tensor(2)))
    x = torch.randn(5, length, device=DEVICE)
    index = torch.randint(0, CHANNELS, (length,), device=DEVICE)
    out = torch.full((5, channels), float("nan"), device=DEVICE)

    with pytest.raises(LaunchError, match="has outermost shape"):
        kernel(x, index, out)


def matmul_arrangement(input, other, output, input_precision, BLOCK_SIZE=16):
    output_arranged = output.tile((BLOCK_SIZE, BLOCK_SIZE))
    input_arranged = input.tile((BLOCK_SIZE, BLOCK_SIZE)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((BLOCK_SIZE, BLOCK_SIZE)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged, input_precision


def accumulate(input, other, output, input_precision):
    """A helper whose local is an annotated compile-time constant, as Triton's
    ``tl.dot(input_precision=...)`` needs it."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    if input_precision == 2:
        precision: ntl.constexpr = "ieee"
    else:
        precision: ntl.constexpr = "tf32"
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k], input_precision=precision)
    output = accumulator


def matmul_application(input, other, output, input_precision):
    product = ntl.zeros(output.shape, dtype=ntl.float32)
    accumulate(input, other, product, input_precision)
    output = product  # noqa: F841


def test_annotated_constexpr_local_in_a_helper():
    tensors = (Tensor(2), Tensor(2), Tensor(2), Tensor(0, constexpr=True, value=2))
    kernel = ninetoothed.make(matmul_arrangement, matmul_application, tensors)
    input = torch.randn(37, 20, device=DEVICE)
    other = torch.randn(20, 35, device=DEVICE)
    output = torch.full((37, 35), float("nan"), device=DEVICE)

    kernel(input, other, output, 2)

    expected = (input.double() @ other.double()).float()
    torch.testing.assert_close(output, expected, atol=1e-4, rtol=1e-4)


def chunk_arrangement(x, out, position, CHUNK=8):
    def chunks(tensor):
        arranged = tensor.tile((1, CHUNK))
        arranged.dtype = arranged.dtype.squeeze(0)
        return arranged

    return chunks(x), chunks(out), chunks(position)


def signed_chunk_cumsum(x, out, position):
    """A running sum within each chunk, element by element, negated at odd columns;
    ``position`` gets each element's offset in memory."""
    total = x[0] * 0.0
    for i in range(x.shape[0]):
        total += x[i]
        out[i] = ntl.where(x[i].offsets(-1) % 2 == 0, total, -total)
        position[i] = x[i].offsets()


@pytest.mark.parametrize("shape", [(3, 20), (5, 8), (2, 1)])
def test_offsets_of_one_element_of_a_tile(shape):
    tensors = (Tensor(2, other=0.0), Tensor(2), Tensor(2))
    kernel = ninetoothed.make(chunk_arrangement, signed_chunk_cumsum, tensors)
    x = torch.randn(shape, device=DEVICE)
    out = torch.full(shape, float("nan"), device=DEVICE)
    position = torch.full(shape, -1, dtype=torch.int64, device=DEVICE)

    kernel(x, out, position)

    columns = torch.arange(shape[1], device=DEVICE)
    padded = torch.nn.functional.pad(x, (0, -shape[1] % 8))
    running = padded.reshape(shape[0], -1, 8).cumsum(-1).reshape(shape[0], -1)[:, : shape[1]]
    expected = torch.where(columns % 2 == 0, running, -running)
    torch.testing.assert_close(out, expected)
    offsets = torch.arange(shape[0], device=DEVICE)[:, None] * shape[1] + columns
    assert torch.equal(position, offsets)
