"""The program index widened to 64 bits: programs whose tiles start past 2^31.

``program_index * tile stride`` is computed before any size or stride joins
it, so with sizes and strides widened but the program index left in int32 it
wraps negative past 2^31, the mask (``index < size``) stays true, and the
kernel writes before its output.  Cheaply, on the CPU too: tiles of one
element 2^20 elements apart (``tile((1,), strides=(2**20,))``), so 2,050
programs reach past 2^31 of a view over a *virtual* storage (``torch.empty``
touches only the pages written).  The view starts 2^31 elements into the
storage, so a wrapped index lands inside the storage, at its start, and the
test fails by value instead of crashing.
"""

from __future__ import annotations

import pytest
from support.base import ON_GPU

import ninetoothed
from ninetoothed import Tensor

torch = pytest.importorskip("torch")

STEP = 2**20
"""Elements between the starts of two programs' tiles."""

ELEMENTS = 2**31 + STEP + 1
"""The output's elements: the last tile starts 2^31 + 2^20 elements in."""

START = 2**31
"""Where the output starts in its storage: a wrapped index lands before it, inside."""


def spaced(x, y):
    return x.tile((1,), strides=(STEP,)), y.tile((1,), strides=(STEP,))


def store(x, y):
    y = x  # noqa: F841


@pytest.mark.gpu
def test_tiles_starting_past_2_31_elements() -> None:
    device = "cuda" if ON_GPU else "cpu"
    kernel = ninetoothed.make(spaced, store, (Tensor(1), Tensor(1)))
    storage = torch.empty(START + ELEMENTS + 64, dtype=torch.int8, device=device)
    storage[:STEP].zero_()
    y = storage[START : START + ELEMENTS]
    programs = (ELEMENTS - 1) // STEP + 1
    written = torch.arange(programs, device=device) * STEP
    y[written] = 0
    x = torch.full((1,), 7, dtype=torch.int8, device=device).expand(ELEMENTS)
    kernel(x, y)
    assert programs == 2050 and int(written[-1]) >= 2**31
    assert bool((y[written] == 7).all()), "a program's tile was not written"
    assert not bool(storage[:STEP].any()), "a wrapped program index wrote before the output"
