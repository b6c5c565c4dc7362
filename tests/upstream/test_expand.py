"""``expand``: broadcasting a singleton dimension across the grid.

Upstream accepts ``expand`` on a dimension whose size is symbolic (it is 1 only
at run time) and checks nothing at arrangement time.
"""

import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError

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


def counts_per_bin(values, bins, counts, BLOCK=4, VALUES=8):
    # ntops's bincount: every program sees all the values (a tile of their whole
    # length, squeezed), and counts those equal to its block of bins.
    grid = bins.tile((BLOCK,)).shape[0]
    values_arranged = values.unsqueeze(0).expand((grid, -1)).tile((1, VALUES)).squeeze(1)
    return values_arranged, bins.tile((BLOCK,)), counts.tile((BLOCK,))


def count_matches(values, bins, counts):
    matches = ntl.expand_dims(bins, 1) == values  # masked values read as -1
    counts = ntl.sum(ntl.where(matches, 1, 0), axis=1)  # noqa: F841


def test_squeeze_a_tile_of_an_empty_tensor():
    """With no values, the squeezed dimension has 0 tiles: as upstream, every value is
    masked (a size other than 0 or 1 is still refused)."""
    kernel = ninetoothed.make(
        counts_per_bin, count_matches, (Tensor(1, other=-1), Tensor(1), Tensor(1))
    )
    bins = torch.arange(10, device=DEVICE)  # three programs
    for values in (torch.tensor([3, 3, 9, 0, 5], device=DEVICE), bins[:0]):
        counts = torch.full((10,), -7, device=DEVICE)
        kernel(values, bins, counts)
        assert torch.equal(counts, torch.bincount(values, minlength=10))
    with pytest.raises(LaunchError, match="squeeze on values: dimension 1 must have size 1"):
        kernel(torch.arange(9, device=DEVICE), bins, torch.empty_like(bins))


def heads(x, mask, out, BLOCK=8):
    return x.tile((1, 1, BLOCK)), mask.tile((1, 1, BLOCK)), out.tile((1, 1, BLOCK))


def add_mask(x, mask, out):
    out = x + mask  # noqa: F841


def test_a_broadcast_view_longer_than_the_grid_is_read_where_the_grid_reaches():
    """ntops's grouped-query attention expands an (L, S) mask to every query head and
    reads it at the key-value head's index: a dimension of stride 0 may be longer
    than the others (every index reads one value); any other difference is refused."""
    kernel = ninetoothed.make(heads, add_mask, (Tensor(3), Tensor(3), Tensor(3)))
    x = torch.randn(2, 3, 20, device=DEVICE)  # grid (2, 3, 3): several programs each way
    row = torch.randn(20, device=DEVICE)
    for mask in (row.expand(2, 6, 20), row.expand(2, 3, 20), row.expand(5, 6, 20)):
        out = torch.full_like(x, float("nan"))
        kernel(x, mask, out)
        torch.testing.assert_close(out, x + row)
    with pytest.raises(LaunchError, match="'x' .* and 'mask' .* must have the same size"):
        kernel(x, row.expand(2, 6, 20).contiguous(), torch.empty_like(x))  # not a broadcast
    with pytest.raises(LaunchError, match="'x' .* and 'mask' .* must have the same size"):
        kernel(x, row.expand(2, 2, 20), torch.empty_like(x))  # a broadcast, but shorter
    with pytest.raises(LaunchError, match="has stride 0 along a dimension"):
        kernel(row.expand(2, 6, 20), x, row.clone().expand(2, 6, 20))  # written: refused
