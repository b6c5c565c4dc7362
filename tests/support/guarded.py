"""Tensors inside NaN-filled buffers, to see reads and writes past a tensor (torch, CPU).

A kernel that reads past a :func:`guarded` view reads NaN, which poisons its
result; one that writes past it leaves a number in :func:`outside`'s NaNs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MARGIN = 16
"""Wider than a tile's overhang in the tests: even unmasked, pinned tiles of up to 16
elements stay in the buffer."""


def guarded(array: np.ndarray) -> tuple[Any, Any]:
    """A view holding the 2-D ``array`` inside a NaN-filled buffer with margins on every
    side (its rows strided), and the buffer."""
    import torch

    rows, columns = array.shape
    buffer = torch.full((rows + 2 * MARGIN, columns + 2 * MARGIN), float("nan"))
    view = buffer[MARGIN : MARGIN + rows, MARGIN : MARGIN + columns]
    view.copy_(torch.from_numpy(array))
    return view, buffer


def outside(buffer: Any, shape: tuple[int, int]) -> np.ndarray:
    """The buffer's elements outside the view (all NaN unless something wrote there)."""
    values = buffer.numpy().copy()
    values[MARGIN : MARGIN + shape[0], MARGIN : MARGIN + shape[1]] = np.nan
    return values
