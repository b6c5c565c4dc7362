"""A kernel over more than 2^31 elements, on the GPU (``nox -s gpu``).

Indices (``program_id * BLOCK + arange``) past 2^31 wrap negative in int32;
the mask then stays true and the kernel writes outside its buffer (an int8
copy of 2^31 + 2^20 elements segfaulted before indices were widened).  The
CPU tests (``test_int64.py``) cover offsets; only a GPU runs this many
programs in reasonable time.
"""

from __future__ import annotations

import pytest
from support.base import ON_GPU

import ninetoothed
from ninetoothed import Symbol, Tensor

pytestmark = pytest.mark.skipif(not ON_GPU, reason="needs a GPU (nox -s gpu): 4.3 GB of int8")

BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True)
ELEMENTS = 2**31 + 2**20 + 3


def increment(x, y):
    y = x + 1  # noqa: F841


def test_elementwise_past_2_31_elements() -> None:
    import torch

    kernel = ninetoothed.make(
        lambda x, y: (x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))),
        increment,
        (Tensor(1), Tensor(1)),
    )
    x = torch.randint(-100, 100, (ELEMENTS,), dtype=torch.int8, device="cuda")
    # A guard band after y: a wrapped index that escapes the mask lands here or before y.
    storage = torch.full((ELEMENTS + 2**20,), 7, dtype=torch.int8, device="cuda")
    y = storage[:ELEMENTS]
    y.fill_(-128)
    kernel(x, y, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)
    assert bool((storage[ELEMENTS:] == 7).all()), "the kernel wrote past its output"
