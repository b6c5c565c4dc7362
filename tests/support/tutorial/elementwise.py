"""Small kernels: a scalar parameter, libdevice, a helper function, 2-D tiles."""

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor, block_size

BLOCK_SIZE = block_size()


def arrangement(x, alpha, y):
    return x.tile((BLOCK_SIZE,)), alpha, y.tile((BLOCK_SIZE,))


def scale_application(x, alpha, y):
    y = alpha * x  # noqa: F841


scale_kernel = ninetoothed.make(arrangement, scale_application, (Tensor(1), Tensor(0), Tensor(1)))


def unary_arrangement(x, y):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def tanh_application(x, y):
    y = ntl.libdevice.tanh(x)  # noqa: F841


tanh_kernel = ninetoothed.make(unary_arrangement, tanh_application, (Tensor(1), Tensor(1)))


def silu(value):
    """A plain helper the application calls: inlined into the kernel."""
    as_float = ntl.cast(value, ntl.float32)
    return as_float * ntl.sigmoid(as_float)


def silu_application(x, y):
    y = silu(x)  # noqa: F841


silu_kernel = ninetoothed.make(unary_arrangement, silu_application, (Tensor(1), Tensor(1)))

BLOCK_SIZE_M = block_size(upper_bound=64)
BLOCK_SIZE_N = block_size(upper_bound=64)


def tiles_2d(x, y):
    return x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), y.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))


def copy_application(x, y):
    y = x  # noqa: F841


copy_2d_kernel = ninetoothed.make(tiles_2d, copy_application, (Tensor(2), Tensor(2)))
