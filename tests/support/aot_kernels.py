"""Kernels the ahead-of-time tests compile (module level: their specs fingerprint)."""

from __future__ import annotations

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
