"""Dropout: a random number per element from ``x.offsets()`` (no dimension).

Upstream's ``x.offsets()`` is the tile's element offsets in the source's memory
(index times stride, summed over the source dimensions), shaped like the tile.
"""

import functools
import os

import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def arrangement(input, p, seed, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((BLOCK_SIZE,)), p, seed, output.tile((BLOCK_SIZE,))


def application(input, p, seed, output):
    output = ntl.where(ntl.rand(seed, input.offsets()) > p, input / (1 - p), 0)


def offsets_application(input, p, seed, output):
    output = input.offsets() + 0 * input


def make(application):
    arranged = functools.partial(arrangement, BLOCK_SIZE=128)
    return ninetoothed.make(arranged, application, (Tensor(1), Tensor(0), Tensor(0), Tensor(1)))


def test_dropout_keeps_a_fraction_and_rescales():
    input = torch.randn(2000, device=DEVICE)
    output = torch.full_like(input, float("nan"))
    p = 0.3

    make(application)(input, p, 1234, output)

    kept = output != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.05
    torch.testing.assert_close(output[kept], input[kept] / (1 - p))


def test_offsets_without_a_dimension_are_memory_offsets():
    input = torch.zeros(3 * 300, device=DEVICE)[::3]
    output = torch.full((300,), float("nan"), device=DEVICE)

    make(offsets_application)(input, 0.0, 0, output)

    torch.testing.assert_close(output, 3 * torch.arange(300.0, device=DEVICE))
