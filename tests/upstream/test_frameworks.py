"""Issue 10's bugs, regression-tested on every framework (torch, paddle, jax).

The other files here run upstream's programs on torch, as upstream does;
these run the same fixes through each framework's adapter: an untiled
arrangement, upstream's one-dimensional ``x.offsets(dim)`` (with unequal
tiles, so a tile-rank result could not broadcast) and ``x.offsets()``, and
masked loads of float8 tensors (no ``other=0`` that Triton cannot cast).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import ninetoothed
from ninetoothed import Tensor

RNG = np.random.default_rng()


def unchanged(x, y):
    return x, y


def copy(x, y):
    y = x  # noqa: F841


def test_untiled_copy_runs_one_element_per_program(framework):
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    kernel = ninetoothed.make(unchanged, copy, (Tensor(2), Tensor(2)))
    args = [framework.from_numpy(x), framework.poisoned((5, 7), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, x)


def tiles(x, y, BLOCK_SIZE_M, BLOCK_SIZE_N):
    return x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), y.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))


def outer_offsets(x, y):
    # Upstream's meaning: 1-D along each source dimension, broadcast by hand.
    y = x.offsets(0)[:, None] * 1000 + x.offsets(1)[None, :]  # noqa: F841


def memory_offsets(x, y):
    y = x.offsets()  # noqa: F841


@pytest.mark.parametrize("blocks", [(4, 8), (8, 4), (4, 4)])
def test_offsets_of_a_dimension_are_one_dimensional(framework, blocks):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1])
    kernel = ninetoothed.make(arrangement, outer_offsets, (Tensor(2), Tensor(2)))
    shape = (13, 10)  # several programs per dimension, ragged edges
    x = RNG.standard_normal(shape).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned(shape, "int64")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    rows, columns = np.indices(shape)
    np.testing.assert_array_equal(y, rows * 1000 + columns)


def test_offsets_without_a_dimension_follow_the_strides(framework):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=4, BLOCK_SIZE_N=8)
    kernel = ninetoothed.make(arrangement, memory_offsets, (Tensor(2), Tensor(2)))
    shape = (9, 11)
    x = framework.non_contiguous(RNG.standard_normal(shape).astype(np.float32))
    args = [x, framework.poisoned(shape, "int64")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    strides = _element_strides(x, shape)
    rows, columns = np.indices(shape)
    np.testing.assert_array_equal(y, rows * strides[0] + columns * strides[1])


def _element_strides(x, shape):
    """``x``'s strides in elements (JAX arrays are row-major)."""
    if hasattr(x, "stride") and callable(x.stride):
        return tuple(x.stride(d) for d in range(len(shape)))
    return (shape[1], 1)


def test_masked_float8_loads_need_no_int_other():
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=4, BLOCK_SIZE_N=8)
    kernel = ninetoothed.make(arrangement, copy, (Tensor(2), Tensor(2)))
    x = torch.randn(9, 13).to(torch.float8_e5m2)
    y = torch.full((9, 13), float("nan")).to(torch.float8_e5m2)
    kernel(x, y)
    torch.testing.assert_close(y.float(), x.float(), rtol=0, atol=0)
