"""2-D max pooling with ceil mode: windows raveled into rows, ``other=-inf`` padding."""

import math
import os

import pytest
import torch
import torch.nn.functional as F

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def arrangement(input, output):
    BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True, lower_bound=16, upper_bound=32)
    WINDOW_HEIGHT = Symbol("WINDOW_HEIGHT", constexpr=True, upper_bound=16)
    WINDOW_WIDTH = Symbol("WINDOW_WIDTH", constexpr=True, upper_bound=16)

    input_arranged = input.tile((1, 1, WINDOW_HEIGHT, WINDOW_WIDTH)).ravel()
    input_arranged = input_arranged.flatten(end_dim=4).flatten(start_dim=1)
    input_arranged = input_arranged.tile((BLOCK_SIZE, -1))

    output_arranged = output.tile((1, 1, 1, 1)).ravel()
    output_arranged = output_arranged.flatten(end_dim=4).flatten(start_dim=1)
    output_arranged = output_arranged.tile((BLOCK_SIZE, -1))
    output_arranged.dtype = output_arranged.dtype.squeeze(1)

    return input_arranged, output_arranged


def application(input, output):
    output = ntl.max(input, axis=1)


kernel = ninetoothed.make(arrangement, application, (Tensor(4, other=float("-inf")), Tensor(4)))


@pytest.mark.parametrize("window", [(3, 3), (2, 4)])
def test_max_pool2d(window):
    input = torch.randn(2, 3, 10, 11, device=DEVICE)
    r, s = window
    p, q = math.ceil((10 - r) / r + 1), math.ceil((11 - s) / s + 1)
    output = torch.full((2, 3, p, q), float("nan"), device=DEVICE)

    kernel(input, output, WINDOW_HEIGHT=r, WINDOW_WIDTH=s)

    torch.testing.assert_close(output, F.max_pool2d(input, window, ceil_mode=True))
