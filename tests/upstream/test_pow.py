"""``libdevice`` from ``ninetoothed.language`` (under the interpreter, computed with numpy)."""

import os

import torch

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.language import libdevice

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"


def arrangement(input, exponent, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((BLOCK_SIZE,)), exponent.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def application(input, exponent, output):
    output = libdevice.pow(input, exponent)


def test_pow():
    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    input = torch.rand(44925, device=DEVICE)
    exponent = torch.rand(44925, device=DEVICE)
    output = torch.full_like(input, float("nan"))

    kernel(input, exponent, output)

    torch.testing.assert_close(output, torch.pow(input, exponent))
