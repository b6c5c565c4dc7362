"""Issue 11, item 5: what used to fail raw or silently now works or names its cause.

Under Triton's interpreter, on every framework: a kernel made before
``TRITON_INTERPRET=1`` was set runs interpreted; ``libdevice`` functions run
under the interpreter (or an error names the function); an integer tensor
given to a float operation names the parameter; ``bool + bool`` is the
framework's logical or.
"""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
from ninetoothed import Tensor, block_size

pytestmark = pytest.mark.interpreter_only

RNG = np.random.default_rng()
BLOCK_SIZE = block_size()


def unary(x, y):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def binary(x, y, z):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def add_one(x, y):
    y = x + 1.5  # noqa: F841


def test_interpreter_switched_on_after_make(framework, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")  # "GPU mode" when the kernel is made
    kernel = ninetoothed.make(unary, add_one, (Tensor(1), Tensor(1)))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = RNG.standard_normal(37).astype("float32")
    args = [framework.from_numpy(x), framework.poisoned((37,), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    np.testing.assert_allclose(y, x + 1.5, rtol=1e-6)
