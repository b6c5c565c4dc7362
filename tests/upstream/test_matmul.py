"""Matrix multiplication and what upstream builds on its arrangement: addmm and conv2d."""

import functools
import os

import pytest
import torch
import torch.nn.functional as F

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"

BLOCK_SIZE_M = ninetoothed.block_size()
BLOCK_SIZE_N = ninetoothed.block_size()
BLOCK_SIZE_K = ninetoothed.block_size()


def arrangement(
    input,
    other,
    output,
    BLOCK_SIZE_M=BLOCK_SIZE_M,
    BLOCK_SIZE_N=BLOCK_SIZE_N,
    BLOCK_SIZE_K=BLOCK_SIZE_K,
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator.to(ntl.float16)


small_blocks = functools.partial(arrangement, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)


def assert_close_to_float64(actual, expected, tolerance=2e-3):
    assert not actual.isnan().any()
    error = (actual.double() - expected).norm() / expected.norm()
    assert error < tolerance, error


def test_matmul_with_ragged_edges():
    kernel = ninetoothed.make(small_blocks, application, (Tensor(2), Tensor(2), Tensor(2)))
    lhs = torch.randn(45, 50, dtype=torch.float16, device=DEVICE)
    rhs = torch.randn(50, 37, dtype=torch.float16, device=DEVICE)
    output = torch.full((45, 37), float("nan"), dtype=torch.float16, device=DEVICE)

    kernel(lhs, rhs, output)

    assert_close_to_float64(output, lhs.double() @ rhs.double())


def test_matmul_with_a_transposed_operand():
    kernel = ninetoothed.make(small_blocks, application, (Tensor(2), Tensor(2), Tensor(2)))
    lhs = torch.randn(33, 40, dtype=torch.float16, device=DEVICE)
    rhs = torch.randn(20, 40, dtype=torch.float16, device=DEVICE).T
    output = torch.full((33, 20), float("nan"), dtype=torch.float16, device=DEVICE)

    kernel(lhs, rhs, output)

    assert_close_to_float64(output, lhs.double() @ rhs.double())


def addmm_arrangement(input, mat1, mat2, beta, alpha, output):
    _, _, input_arranged = small_blocks(mat1, mat2, input)
    mat1_arranged, mat2_arranged, output_arranged = small_blocks(mat1, mat2, output)

    return input_arranged, mat1_arranged, mat2_arranged, beta, alpha, output_arranged


def addmm_application(input, mat1, mat2, beta, alpha, output):
    product = ntl.zeros(output.shape, dtype=ntl.float32)
    application(mat1, mat2, product)
    output = beta * input + alpha * product


def test_addmm_reuses_the_matmul_application():
    tensors = (Tensor(2), Tensor(2), Tensor(2), Tensor(0), Tensor(0), Tensor(2))
    kernel = ninetoothed.make(addmm_arrangement, addmm_application, tensors)
    input = torch.randn(40, 24, dtype=torch.float16, device=DEVICE)
    mat1 = torch.randn(40, 50, dtype=torch.float16, device=DEVICE)
    mat2 = torch.randn(50, 24, dtype=torch.float16, device=DEVICE)
    output = torch.full((40, 24), float("nan"), dtype=torch.float16, device=DEVICE)
    beta, alpha = 0.5, 1.5

    kernel(input, mat1, mat2, beta, alpha, output)

    # The application stores the float32 product through a float16 local: round it too.
    product = (mat1.double() @ mat2.double()).half().double()
    assert_close_to_float64(output, beta * input.double() + alpha * product)


def conv2d_arrangement(input, filter, output):
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1).permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return small_blocks(input_arranged, filter_arranged, output_arranged)


@pytest.mark.parametrize("shape", [(2, 4, 9, 8, 6, 3, 3), (1, 3, 7, 7, 5, 2, 4)])
def test_conv2d_as_an_implicit_matmul(shape):
    n, c, h, w, k, r, s = shape
    tensors = (Tensor(4), Tensor(4, shape_options={"constexpr": True}), Tensor(4))
    kernel = ninetoothed.make(conv2d_arrangement, application, tensors)
    input = torch.randn(n, c, h, w, dtype=torch.float16, device=DEVICE)
    filter = torch.randn(k, c, r, s, dtype=torch.float16, device=DEVICE)
    output = torch.full(
        (n, k, h - r + 1, w - s + 1), float("nan"), dtype=torch.float16, device=DEVICE
    )

    kernel(input, filter, output)

    assert_close_to_float64(output, F.conv2d(input.double(), filter.double()))


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="float8 dot needs a GPU")
def test_float8_e5m2_matmul_with_ragged_edges():
    blocks = functools.partial(arrangement, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    kernel = ninetoothed.make(blocks, application, (Tensor(2), Tensor(2), Tensor(2)))
    lhs = torch.randn(100, 72, device=DEVICE).to(torch.float8_e5m2)
    rhs = torch.randn(50, 72, device=DEVICE).to(torch.float8_e5m2).T
    output = torch.full((100, 50), float("nan"), dtype=torch.float16, device=DEVICE)

    kernel(lhs, rhs, output)

    expected = lhs.to(torch.float16).double() @ rhs.to(torch.float16).double()
    torch.testing.assert_close(output.double(), expected, atol=0.125, rtol=1e-2)


def row_of_tiles(input, other, output):
    """Each program computes a row of output tiles: one more level on every operand."""
    input_arranged, other_arranged, output_arranged = small_blocks(input, other, output)

    def one_more_level(arranged):
        arranged = arranged.tile((1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        return arranged

    return tuple(map(one_more_level, (input_arranged, other_arranged, output_arranged)))


def row_of_tiles_application(input, other, output):
    for j in range(input.shape[0]):
        accumulator = ntl.zeros(output.dtype.shape, dtype=ntl.float32)
        for k in range(input.dtype.shape[0]):
            # Upstream: one subscript for two levels, input[j, k] is input[j][k].
            accumulator += ntl.dot(input[j, k], other[j, k])
        output[j] = accumulator.to(ntl.float16)


def test_one_subscript_indexes_several_levels():
    kernel = ninetoothed.make(
        row_of_tiles, row_of_tiles_application, tuple(Tensor(2) for _ in range(3))
    )
    lhs = torch.randn(45, 50, dtype=torch.float16, device=DEVICE)
    rhs = torch.randn(50, 37, dtype=torch.float16, device=DEVICE)
    output = torch.full((45, 37), float("nan"), dtype=torch.float16, device=DEVICE)

    kernel(lhs, rhs, output)

    assert_close_to_float64(output, lhs.double() @ rhs.double())
