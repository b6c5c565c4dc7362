"""``expand``: broadcasting a singleton dimension across the grid.

Upstream accepts ``expand`` on a dimension whose size is symbolic (it is 1 only
at run time) and checks nothing at arrangement time.
"""

import os

import torch

import ninetoothed
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def add_row_application(x, row, output):
    output = x + row


def unsqueezed_row(x, row, output, BLOCK_SIZE_M=8, BLOCK_SIZE_N=16):
    tile_shape = (BLOCK_SIZE_M, BLOCK_SIZE_N)
    row_arranged = row.unsqueeze(0).expand((x.shape[0], -1))
    return x.tile(tile_shape), row_arranged.tile(tile_shape), output.tile(tile_shape)


def row_of_a_matrix(x, row, output, BLOCK_SIZE_M=8, BLOCK_SIZE_N=16):
    tile_shape = (BLOCK_SIZE_M, BLOCK_SIZE_N)
    row_arranged = row.expand((x.shape[0], -1))
    return x.tile(tile_shape), row_arranged.tile(tile_shape), output.tile(tile_shape)


def test_expand_an_unsqueezed_vector():
    kernel = ninetoothed.make(
        unsqueezed_row, add_row_application, (Tensor(2), Tensor(1), Tensor(2))
    )
    x = torch.randn(20, 35, device=DEVICE)
    row = torch.randn(35, device=DEVICE)
    output = torch.full_like(x, float("nan"))

    kernel(x, row, output)

    torch.testing.assert_close(output, x + row)


def test_expand_a_dimension_that_is_one_at_run_time():
    kernel = ninetoothed.make(
        row_of_a_matrix, add_row_application, (Tensor(2), Tensor(2), Tensor(2))
    )
    x = torch.randn(20, 35, device=DEVICE)
    row = torch.randn(1, 35, device=DEVICE)
    output = torch.full_like(x, float("nan"))

    kernel(x, row, output)

    torch.testing.assert_close(output, x + row)


def expand_to_a_block(x, BLOCK_SIZE=ninetoothed.block_size()):
    return (x.expand((BLOCK_SIZE,)).tile((BLOCK_SIZE,)),)


def read_only(x):
    x  # noqa: B018 (a load and nothing else, as upstream's test has it)


def test_expand_an_empty_vector():
    kernel = ninetoothed.make(expand_to_a_block, read_only, (Tensor(1),))

    kernel(torch.empty((0,), device=DEVICE))
