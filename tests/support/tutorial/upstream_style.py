"""Kernels written the way upstream NineToothed's examples write them.

Each exercises something issue 10 added, so that it is compiled for the GPU
(``tests/test_compile_hopper.py``) and not only interpreted: gathering from
and scattering to ``x.source[...]``, pointer arithmetic on
``x.source.data_ptr()``, ``x.offsets()`` seeding random numbers (dropout),
an untiled arrangement (one element per program), ``expand`` of a size that
is 1 only at run time, and a masked copy of float8 tiles.
"""

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor, block_size

BLOCK_SIZE_M = block_size(upper_bound=64)
BLOCK_SIZE_N = block_size(upper_bound=64)
BLOCK_SIZE = block_size()


def tiles_2d(x, y):
    tile_shape = (BLOCK_SIZE_M, BLOCK_SIZE_N)
    return x.tile(tile_shape), y.tile(tile_shape)


def gather_application(x, y):
    y = x.source[x.offsets(0)[:, None], x.offsets(1)[None, :]]  # noqa: F841


def scatter_transposed_application(x, y):
    y.source[x.offsets(1)[None, :], x.offsets(0)[:, None]] = x


def pointer_application(x, y):
    y = ntl.load(  # noqa: F841
        x.source.data_ptr()
        + x.offsets(0)[:, None] * x.source.stride(0)
        + x.offsets(1)[None, :] * x.source.stride(1),
        mask=(x.offsets(0)[:, None] < x.source.shape[0])
        & (x.offsets(1)[None, :] < x.source.shape[1]),
    )


gather_kernel = ninetoothed.make(tiles_2d, gather_application, (Tensor(2), Tensor(2)))
scatter_kernel = ninetoothed.make(tiles_2d, scatter_transposed_application, (Tensor(2), Tensor(2)))
pointer_kernel = ninetoothed.make(tiles_2d, pointer_application, (Tensor(2), Tensor(2)))


def dropout_arrangement(x, p, seed, y):
    return x.tile((BLOCK_SIZE,)), p, seed, y.tile((BLOCK_SIZE,))


def dropout_application(x, p, seed, y):
    keep = ntl.rand(seed, x.offsets()) > p
    y = ntl.where(keep, x / (1 - p), 0.0)  # noqa: F841


dropout_kernel = ninetoothed.make(
    dropout_arrangement, dropout_application, (Tensor(1), Tensor(0), Tensor(0), Tensor(1))
)


def untiled(x, y):
    return x[1:], y[:-1]


def copy_application(x, y):
    y = x  # noqa: F841


untiled_kernel = ninetoothed.make(untiled, copy_application, (Tensor(1), Tensor(1)))
float8_copy_kernel = ninetoothed.make(tiles_2d, copy_application, (Tensor(2), Tensor(2)))


def row_arrangement(x, row, y):
    tile_shape = (BLOCK_SIZE_M, BLOCK_SIZE_N)
    row_arranged = row.expand((x.shape[0], -1)).tile(tile_shape)
    return x.tile(tile_shape), row_arranged, y.tile(tile_shape)


def add_row_application(x, row, y):
    y = x + row  # noqa: F841


expand_kernel = ninetoothed.make(
    row_arrangement, add_row_application, (Tensor(2), Tensor(2), Tensor(2))
)
