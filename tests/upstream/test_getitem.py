"""Slicing inside arrangements, then tiling: kernels that read through a slice."""

import os

import pytest
import torch

import ninetoothed
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

KEYS = [
    (slice(1, None), slice(None)),
    (slice(None, None, -1), slice(2, -3)),
    (slice(None), slice(None, None, 2)),
    (slice(3, 15, 4), slice(1, None, 3)),  # 3 rows in one tile: a literal 1 in the grid
]


def application(input, output):
    output = input


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_copy_a_slice(key):
    def arrangement(input, output):
        return input[key].tile((4, 8)), output.tile((4, 8))

    kernel = ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2)))
    input = torch.randn(17, 19, device=DEVICE)
    expected = torch.from_numpy(input.numpy(force=True)[key].copy())  # torch refuses step < 0
    output = torch.full(expected.shape, float("nan"), device=DEVICE)

    kernel(input, output)

    torch.testing.assert_close(output.cpu(), expected)


def test_an_integer_index_removes_a_dimension():
    def arrangement(input, output):
        return input[:, 2, :].tile((4, 4)), output.tile((4, 4))

    kernel = ninetoothed.make(arrangement, application, (Tensor(3), Tensor(2)))
    input = torch.randn(6, 5, 7, device=DEVICE)
    output = torch.full((6, 7), float("nan"), device=DEVICE)

    kernel(input, output)

    torch.testing.assert_close(output, input[:, 2, :])
