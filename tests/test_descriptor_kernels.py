"""Persistent products whose tiles go through tensor descriptors, on every framework.

A persistent program loads and stores its tiles through tensor descriptors where
the call's layout allows (``nt_triton._codegen.descriptors``): here rows of 160 and
224 bytes do, a row of 164 bytes, a transposed operand and a one-element slice's
address do not (those tensors keep pointer loads in the same call).  Tiles of 16
under the interpreter's 3 persistent programs: every program walks several grid
indices, and the last row and column of tiles stick out of the matrices (the copy
clips them).  Outputs are poisoned first; the reference is float64.  On the GPU
(``nox -s gpu``) the same shapes take the copy engine.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.base import ON_GPU

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.library import mm

RNG = np.random.default_rng()
BLOCK = 16
TOLERANCE = 2e-2 if ON_GPU else 1e-4
"""Float32 products use TF32 on the GPU (about 1e-3 relative per product)."""


def random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def tiles_of_16(input, other, output):
    return mm.arrangement(input, other, output, BLOCK, BLOCK, BLOCK)


PRODUCTS = {
    ndim: ninetoothed.make(
        tiles_of_16, mm.application, tuple(Tensor(ndim) for _ in range(3)), persistent=True
    )
    for ndim in (2, 3)
}


@pytest.mark.parametrize(
    ("m", "k", "n"),
    [(37, 40, 56), (37, 41, 56), (48, 32, 64), (1, 8, 8), (5, 16, 100), (0, 8, 8), (20, 0, 12)],
)
def test_a_persistent_product(framework, m, k, n):
    a, b = random(m, k), random(k, n)
    args = [framework.from_numpy(a), framework.from_numpy(b), framework.poisoned((m, n), "float32")]
    (c,) = framework.call(PRODUCTS[2], args, {}, outputs=[2])
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=TOLERANCE, atol=TOLERANCE)


def test_operands_that_descriptors_cannot_take(framework):
    """A transposed operand (innermost stride not 1) and one starting an element into
    its buffer (an address off 16 bytes) keep pointer loads beside the descriptors."""
    a, b = random(33, 49), random(48, 40)
    sliced = framework.from_numpy(a)[:, 1:]
    args = [sliced, framework.non_contiguous(b), framework.poisoned((33, 40), "float32")]
    (c,) = framework.call(PRODUCTS[2], args, {}, outputs=[2])
    expected = a[:, 1:].astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=TOLERANCE, atol=TOLERANCE)


@pytest.mark.parametrize("shape", [(3, 17, 24, 40), (2, 16, 16, 16), (1, 5, 8, 36)])
def test_a_persistent_batched_product(framework, shape):
    """Three-dimensional boxes (one matrix of the batch): the copy's block is
    ``(1, 16, 16)``, reshaped to the tile's ``(16, 16)``."""
    batch, m, k, n = shape
    a, b = random(batch, m, k), random(batch, k, n)
    args = [
        framework.from_numpy(a),
        framework.from_numpy(b),
        framework.poisoned((batch, m, n), "float32"),
    ]
    (c,) = framework.call(PRODUCTS[3], args, {}, outputs=[2])
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=TOLERANCE, atol=TOLERANCE)
