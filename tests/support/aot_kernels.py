"""Kernels the ahead-of-time tests compile (module level: their specs fingerprint)."""

from __future__ import annotations

import triton

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor


def add_arrangement(x, y, z):
    return x.tile((256,)), y.tile((256,)), z.tile((256,))


def add_application(x, y, z):
    z = x + y  # noqa: F841


def add_tensors(dtype=ninetoothed.float16):
    return tuple(Tensor(1, dtype=dtype) for _ in range(3))


def flat_arrangement(x, y):
    return x.flatten().tile((128,)), y.flatten().tile((128,))


def copy_application(x, y):
    y = x  # noqa: F841


def flat_tensors():
    return Tensor(3, dtype=ninetoothed.float32), Tensor(3, dtype=ninetoothed.float32)


def rows_arrangement(x, y):
    # The outer dimensions are tiled by 1 (batch and heads, as attention's): their sizes
    # are never known divisible by 16, while the inner ones' tiles make theirs so.
    return x.tile((1, 1, 32, 16)), y.tile((1, 1, 32, 16))


def rows_tensors():
    return Tensor(4, dtype=ninetoothed.float16), Tensor(4, dtype=ninetoothed.float16)


def mm_arrangement(a, b, c):
    c_tiled = c.tile((32, 64))
    a_tiled = a.tile((32, 16)).tile((1, -1)).expand((-1, c_tiled.shape[1]))
    a_tiled.dtype = a_tiled.dtype.squeeze(0)
    b_tiled = b.tile((16, 64)).tile((-1, 1)).expand((c_tiled.shape[0], -1))
    b_tiled.dtype = b_tiled.dtype.squeeze(1)
    return a_tiled, b_tiled, c_tiled


def mm_application(a, b, c):
    accumulator = ntl.zeros(c.shape, dtype=ntl.float32)
    for k in range(a.shape[0]):
        accumulator += ntl.dot(a[k], b[k])
    c = accumulator  # noqa: F841


def mm_tensors():
    return tuple(Tensor(2, dtype=ninetoothed.float16) for _ in range(3))


def scale_arrangement(x, alpha, flag, y):
    return x.tile((64,)), alpha, flag, y.tile((64,))


def scale_application(x, alpha, flag, y):
    if flag:
        y = x * alpha  # noqa: F841
    else:
        y = x  # noqa: F841


def scale_tensors():
    return (
        Tensor(1, dtype=ninetoothed.float32),
        Tensor(0, dtype=ninetoothed.float32),
        Tensor(0, constexpr=True, value=1),
        Tensor(1, dtype=ninetoothed.float32),
    )


def axpy_arrangement(input, other, alpha, output, block_size=None):
    if block_size is None:
        block_size = ninetoothed.block_size()
    tiled = (input.tile((block_size,)), other.tile((block_size,)))
    return (*tiled, alpha, output.tile((block_size,)))


def axpy_application(input, other, alpha, output):
    output = input + alpha * other  # noqa: F841


def axpy_premake(size=None, dtype=None, block_size=None):
    """Upstream's test_aot_auto_tuning premake (``output = input + alpha * other``)."""
    import functools

    arrangement = functools.partial(axpy_arrangement, block_size=block_size)
    tensors = (
        Tensor(shape=(size,), dtype=dtype),
        Tensor(shape=(size,), dtype=dtype),
        Tensor(0, dtype=ninetoothed.float64),
        Tensor(shape=(size,), dtype=dtype),
    )
    return arrangement, axpy_application, tensors


def axpy_premake_with_pattern(size=None, dtype=None, block_size=None, pattern=None):
    """:func:`axpy_premake` with a parameter that changes nothing (any value)."""
    return axpy_premake(size, dtype, block_size)


AXPY_CONFIGS = (
    ((), {"size": 1127, "dtype": ninetoothed.float16, "block_size": 64}, {"num_warps": 4}),
    ((), {"size": 1127, "dtype": ninetoothed.float16, "block_size": 64}, {"num_warps": 8}),
    ((), {"size": 1127, "dtype": ninetoothed.float16, "block_size": 256}, {"num_warps": 4}),
    ((), {"size": 1127, "dtype": ninetoothed.float32, "block_size": 512}, {}),
)
"""Two keys: (1127, float16) with three tuned variants, (1127, float32) with one."""


@triton.jit
def twice(x):
    return x * 2


def twice_application(x, y):
    y = twice(x)  # noqa: F841


BLOCK = ninetoothed.Symbol("BLOCK", constexpr=True)
"""A block size the call gives (a constexpr symbol)."""


def given_block_arrangement(x, y, z):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def flagged_tensors():
    """:func:`scale_tensors` with the flag given at the call (a constexpr without a value)."""
    return (
        Tensor(1, dtype=ninetoothed.float32),
        Tensor(0, dtype=ninetoothed.float32),
        Tensor(0, constexpr=True),
        Tensor(1, dtype=ninetoothed.float32),
    )


def given_block_premake(dtype=ninetoothed.float16):
    """A premake whose kernel takes ``BLOCK`` at the call."""
    return given_block_arrangement, add_application, add_tensors(dtype)


def row_arrangement(x, y):
    row = x.tile((1, -1))
    row.dtype = row.dtype.squeeze(0)
    return row, y.tile((1,))


def row_sum_application(x, y):
    y = ntl.sum(x)  # noqa: F841


def row_tensors(lower=17, upper=64):
    """Rows of a constexpr length between ``lower`` and ``upper`` (padded to 32 or 64)."""
    options = (None, {"constexpr": True, "lower_bound": lower, "upper_bound": upper})
    return Tensor(2, dtype=ninetoothed.float32, shape_options=options), Tensor(
        1, dtype=ninetoothed.float32
    )
