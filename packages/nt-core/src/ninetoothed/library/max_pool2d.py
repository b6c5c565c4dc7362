"""``max_pool2d``: the largest element of each (R, S) window of an (N, C, H, W) input.

Windows are strided ``tile``s of the input padded with ``-inf`` (the input's
``other``), raveled into rows of R*S elements, one row per output element;
each program takes ``BLOCK_SIZE`` of those rows and their maxima.  A window
holding NaN gives NaN, as torch's.
"""

from __future__ import annotations

import functools

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile, flat_blocks

__all__ = ["Pair", "application", "arrangement", "premake"]

Pair = tuple[int, int]


def arrangement(
    input: Tensor,
    output: Tensor,
    window: Pair = (2, 2),
    stride: Pair = (2, 2),
    padding: Pair = (0, 0),
    BLOCK_SIZE: Symbol = block_size(64, 1024),
) -> tuple[Tensor, Tensor]:
    """Blocks of windows (one row each) and the blocks of output elements they make."""
    if any(padding):
        input = input.pad(((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    windows = input.tile((1, 1, *window), strides=(1, 1, *stride), floor_mode=True).ravel()
    windows = windows.flatten(end_dim=4).flatten(start_dim=1)
    windows = windows.tile((BLOCK_SIZE, -1)).squeeze(1)
    return windows, flat_blocks(output, BLOCK_SIZE)


def application(input: Tile, output: Tile) -> None:
    """One block of windows: each one's maximum, NaN where the window holds one (as
    torch's: ``ntl.max`` compares, and every comparison with NaN is false)."""
    holds_nan = ntl.max(ntl.where(input != input, 1, 0), 1) > 0
    output = ntl.where(holds_nan, float("nan"), ntl.max(input, 1))  # noqa: F841


def premake(window: Pair, stride: Pair, padding: Pair) -> Premade:
    """The kernel for one window size, stride and padding."""
    tensors = (Tensor(4, other=float("-inf")), Tensor(4))
    arranged = functools.partial(arrangement, window=window, stride=stride, padding=padding)
    return Premade(arranged, application, tensors)
