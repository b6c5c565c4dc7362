"""Arrangements that do not tile: one element per program.

A single-level tensor handed to the application is one element per program,
the grid being its shape.  (Upstream 0.26 has a quirk here: an arrangement
that returns the *unchanged* source tensors, ``return x, y``, addresses
element 0 in every program, so ``y = x`` copies only ``x[0]``; any
meta-operation, even a full slice, gives one element per program.  These
tests pin the per-element meaning for both.)
"""

import os

import pytest
import torch

import ninetoothed
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

SHAPE_OPTIONS = {"upper_bound": 64}


def copy(x, y):
    y = x


def whole(x, y):
    return x[:], y[:]


def shifted(x, y):
    return x[1:], y[:-1]


def unchanged(x, y):
    return x, y


@pytest.mark.parametrize("arrangement, shape", [(whole, (37,)), (unchanged, (5, 7))])
def test_copy_every_element(arrangement, shape):
    tensors = tuple(Tensor(len(shape), shape_options=SHAPE_OPTIONS) for _ in range(2))
    kernel = ninetoothed.make(arrangement, copy, tensors)
    x = torch.randn(shape, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y, x)


def test_shifted_slices_copy_with_an_offset():
    tensors = (Tensor(1, shape_options=SHAPE_OPTIONS), Tensor(1, shape_options=SHAPE_OPTIONS))
    kernel = ninetoothed.make(shifted, copy, tensors)
    x = torch.randn(37, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y[:-1], x[1:])
    assert y[-1].isnan()
