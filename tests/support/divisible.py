"""Kernels made directly with ``ninetoothed.make`` whose tiles may or may not divide
the sizes: a flattened element-wise add and a matrix product (tests of
``nt_triton._codegen.divisibility``)."""

from __future__ import annotations

import ninetoothed
from ninetoothed import Tensor, block_size


def matrices(count: int) -> tuple[Tensor, ...]:
    """``count`` distinct 2-D tensors (each with its own size symbols)."""
    return tuple(Tensor(2) for _ in range(count))


def flat_add_arrangement(x, y, z, BLOCK=block_size()):  # noqa: B008
    return tuple(t.flatten().tile((BLOCK,)) for t in (x, y, z))


def add_application(x, y, z):
    z = x + y  # noqa: F841


def mm_arrangement(a, b, c, BM=block_size(), BN=block_size(), BK=block_size()):  # noqa: B008
    c_arranged = c.tile((BM, BN))
    a_arranged = a.tile((BM, BK)).tile((1, -1)).expand((-1, c_arranged.shape[1]))
    a_arranged.dtype = a_arranged.dtype.squeeze(0)
    b_arranged = b.tile((BK, BN)).tile((-1, 1)).expand((c_arranged.shape[0], -1))
    b_arranged.dtype = b_arranged.dtype.squeeze(1)
    return a_arranged, b_arranged, c_arranged


def mm_application(a, b, c):
    accumulator = ninetoothed.language.zeros(c.shape, dtype=ninetoothed.language.float32)
    for k in range(a.shape[0]):
        accumulator += ninetoothed.language.dot(a[k], b[k])
    c = accumulator  # noqa: F841


FLAT_ADD = ninetoothed.make(flat_add_arrangement, add_application, matrices(3))
MM = ninetoothed.make(mm_arrangement, mm_application, matrices(3))
