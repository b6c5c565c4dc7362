"""Row softmax with the block size given at the call (``Symbol(..., constexpr=True)``)."""

import os

import pytest
import torch
import triton

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


@ninetoothed.jit
def softmax_kernel(
    input_row: Tensor(2, other=float("-inf")).tile((1, BLOCK_SIZE)),
    output_row: Tensor(2).tile((1, BLOCK_SIZE)),
):
    row_minus_max = input_row - ntl.max(input_row)
    numerator = ntl.exp(row_minus_max)
    denominator = ntl.sum(numerator)
    output_row = numerator / denominator


@pytest.mark.parametrize("power_of_two", [True, False])
def test_softmax(power_of_two):
    input = torch.randn(37, 100, device=DEVICE)
    output = torch.full_like(input, float("nan"))
    block_size = triton.next_power_of_2(input.shape[-1]) if power_of_two else input.shape[-1]

    softmax_kernel(input, output, BLOCK_SIZE=block_size)

    torch.testing.assert_close(output, torch.softmax(input, dim=-1))
