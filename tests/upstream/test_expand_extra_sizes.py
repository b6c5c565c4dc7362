"""``expand`` given more sizes than the level has dimensions, as upstream runs it.

Upstream zips ``expand``'s sizes with the level's dimensions, so extra sizes
are ignored.  ntops.lab's layer, RMS and batch norms rely on it:
``w.tile((H,)).expand((x_tiles.shape[0], -1))`` is "w's one tile, for every
row of x".  That reading is right only while w has one tile, so here the
expanded dimension must have size 1 at run time, as for any ``expand`` of a
symbolic size: a weight split over several tiles is refused, where upstream
would give every program the first tile.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from support.base import ON_GPU
from support.library import assert_close, f64, random

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.runtime.hookspecs import TensorInfo

DEVICE = "cuda" if ON_GPU else "cpu"

WIDTHS = [7, 13, 16]


def rms_norm_arrangement(x, weight, out, hidden):
    x_tiles = x.tile((1, hidden.value))
    weight_tiles = weight.tile((hidden.value,)).expand((x_tiles.shape[0], -1))
    return x_tiles, weight_tiles, out.tile((1, hidden.value)), hidden


def rms_norm_application(x, weight, out, hidden):
    mean_square = ntl.sum(x * x, axis=1) / hidden
    out = x * ntl.rsqrt(mean_square[:, None] + 1.0e-5) * weight  # noqa: F841


@functools.cache
def rms_norm(hidden):
    hidden_tensor = Tensor(0, constexpr=True, value=hidden, name="hidden")
    return ninetoothed.make(
        rms_norm_arrangement,
        rms_norm_application,
        (Tensor(2), Tensor(1), Tensor(2), hidden_tensor),
    )


def scale_arrangement(x, scale, out, BLOCK_N=ninetoothed.block_size()):  # noqa: B008
    x_tiles = x.tile((1, BLOCK_N))
    scale_tiles = scale.tile((BLOCK_N,)).expand((x_tiles.shape[0], -1))
    return x_tiles, scale_tiles, out.tile((1, BLOCK_N))


def scale_application(x, scale, out):
    out = x * scale  # noqa: F841


SCALE = ninetoothed.make(scale_arrangement, scale_application, (Tensor(2), Tensor(1), Tensor(2)))


@pytest.mark.parametrize("width", WIDTHS)
def test_a_weight_expanded_with_an_extra_size(framework, width):
    x, weight = random((5, width), "float32"), random((width,), "float32")
    out = framework.poisoned(x.shape, "float32")
    args = [framework.non_contiguous(x), framework.from_numpy(weight), out, width]
    (result,) = framework.call(rms_norm(width), args, {}, [2])
    x64 = f64(x)
    expected = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1.0e-5) * f64(weight)
    assert_close(result, expected, "float32")


@pytest.mark.parametrize("channels", [1, 13, 16])
def test_a_per_channel_scale_in_one_tile(framework, channels):
    x, scale = random((7, channels), "float32"), random((channels,), "float32")
    out = framework.poisoned(x.shape, "float32")
    args = [framework.from_numpy(x), framework.from_numpy(scale), out]
    (result,) = framework.call(SCALE, args, {"BLOCK_N": 16}, [2])
    assert_close(result, f64(x) * f64(scale), "float32")


def test_a_scale_over_several_tiles_is_refused():
    # Upstream would give every program scale's first tile.
    x, scale = torch.randn(7, 40, device=DEVICE), torch.randn(40, device=DEVICE)
    out = torch.full_like(x, float("nan"))
    refusal = r"expand on scale: dimension 0 must have size 1 \(or 0\) to be expanded to x_size_0"
    with pytest.raises(ValueError, match=refusal):
        SCALE(x, scale, out, BLOCK_N=16)


def test_only_blocks_that_hold_the_scale_are_tuned_over():
    """Whether the scale's tiles are one depends on the block size: the configurations
    whose grid fails the check are left out (JAX's autotune list, its first grid), and
    the first failure is raised when no configuration holds it."""
    # The space is given, not the environment's (the GPU suite keeps one configuration).
    blocks = [{"BLOCK_N": block} for block in (16, 64, 256, 1024)]
    made = ninetoothed.make(
        scale_arrangement, scale_application, (Tensor(2), Tensor(1), Tensor(2)), configs=blocks
    )
    kernel = made.generated
    infos = [
        TensorInfo((7, 200), (200, 1), "float32", "cpu", 0),
        TensorInfo((200,), (1,), "float32", "cpu", 0),
        TensorInfo((7, 200), (200, 1), "float32", "cpu", 0),
    ]
    plan = kernel.prepare(infos, [0, 0, 0], {})
    viable = kernel.viable_configurations(plan)
    assert viable and all(c.values["BLOCK_N"] >= 200 for c in viable)
    assert len(viable) < len(kernel.configurations)
    grid, meta = kernel.concrete_grid(plan)
    assert meta["BLOCK_N"] >= 200 and grid == (7,)
    wide = [TensorInfo((7, 1 << 20), ((1 << 20), 1), "float32", "cpu", 0)] * 3
    wide[1] = TensorInfo((1 << 20,), (1,), "float32", "cpu", 0)
    with pytest.raises(ValueError, match="expand on scale: dimension 0 must have size 1"):
        kernel.viable_configurations(kernel.prepare(wide, [0, 0, 0], {}))
