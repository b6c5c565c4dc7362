"""64-bit offsets and indices, on the CPU: views whose offsets pass 2^31.

A view over a large *virtual* storage (``torch.empty`` of 4 GiB touches only
the pages written) whose strides each fit in int32 but whose offsets add up
past 2^31.  The view starts 2^31 elements into the storage, so an offset that
wraps to a negative int32 still lands inside the storage (at its start) and
the test fails by value instead of crashing.  These catch a disabled 64-bit
flag, a flag decided on the largest stride instead of the extent, and
widening only some strides: each layout runs with the large-stride dimension
in one tile (indexed by ``tl.arange`` alone, so only the stride's width
matters) and spread over programs (the program index's width matters too).
"""

from __future__ import annotations

import pytest

import ninetoothed
from ninetoothed import Tensor

torch = pytest.importorskip("torch")

STRIDE = 2**30
START = 2**31
LAYOUTS = {
    # (shape, strides): the large offset in the last dimension, then in the first.
    "last": ((2, 3), (1, STRIDE)),
    "first": ((3, 2), (STRIDE, 1)),
}


def copy(x, y):
    y = x  # noqa: F841


TILES = [(1, 4), (4, 1), (1, 2), (2, 1)]
"""Tiles: one covering a layout's large dimension, one spreading it over programs."""


def kernel(layout: str, tile: tuple[int, int]) -> ninetoothed.Kernel:
    """The copy kernel, with the layout's shape declared: a dimension that one tile
    covers is then indexed by ``tl.arange`` alone (its program index is 0)."""
    shape = LAYOUTS[layout][0]
    return ninetoothed.make(
        lambda x, y: (x.tile(tile), y.tile(tile)),
        copy,
        (Tensor(shape=shape), Tensor(shape=shape)),
    )


def large_view(shape: tuple[int, int], strides: tuple[int, int]) -> tuple[object, object]:
    """A view of ``shape`` and ``strides`` starting at ``START`` in a 4 GiB storage."""
    storage = torch.empty(START + 2 * STRIDE + 64, dtype=torch.int8)
    storage[:64] = 0
    return storage, storage.as_strided(shape, strides, storage_offset=START)


@pytest.mark.interpreter_only
@pytest.mark.parametrize("large", ["x", "y"], ids=["loads", "stores"])
@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_offsets_past_2_31(layout: str, tile: tuple[int, int], large: str) -> None:
    """Copy into or out of the large view; nothing may land at the storage's start."""
    shape, strides = LAYOUTS[layout]
    storage, view = large_view(shape, strides)
    values = torch.arange(1, 7, dtype=torch.int8).reshape(shape)
    small = torch.full(shape, -1, dtype=torch.int8)
    view.copy_(values if large == "x" else small)
    x, y = (view, small) if large == "x" else (values, view)
    kernel(layout, tile)(x, y)
    torch.testing.assert_close(y, values)
    assert not storage[:64].any(), "a wrapped offset wrote the start of the storage"
