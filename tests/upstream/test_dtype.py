"""Upstream's top-level dtype constants, usable as ``Tensor(dtype=...)``."""

import functools
import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

NAMES = "float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64"


def arrangement(x, y, BLOCK_SIZE=64):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def application(x, y):
    y = x


def test_every_constant_exists_and_they_differ():
    constants = [getattr(ninetoothed, name) for name in NAMES.split()]

    assert len(set(map(repr, constants))) == len(constants)


@pytest.mark.parametrize(
    "name, torch_dtype",
    [("float16", torch.float16), ("float32", torch.float32), ("int32", torch.int32)],
)
def test_declared_dtypes_run(name, torch_dtype):
    dtype = getattr(ninetoothed, name)
    kernel = ninetoothed.make(
        arrangement, application, (Tensor(1, dtype=dtype), Tensor(1, dtype=dtype))
    )
    x = (torch.randn(100, device=DEVICE) * 100).to(torch_dtype)
    y = torch.zeros_like(x)

    kernel(x, y)

    assert torch.equal(y, x)


def test_a_framework_dtype_works_or_is_refused_clearly():
    try:
        tensors = (Tensor(1, dtype=torch.float16), Tensor(1, dtype=torch.float16))
    except (TypeError, ValueError) as error:
        assert "ninetoothed.float16" in str(error)
        return
    kernel = ninetoothed.make(functools.partial(arrangement, BLOCK_SIZE=32), application, tensors)
    x = torch.randn(100, dtype=torch.float16, device=DEVICE)
    y = torch.zeros_like(x)

    kernel(x, y)

    assert torch.equal(y, x)


def truncate(x, y):
    y = x.to(ntl.int32)  # the tile's own method: a cast, then stored as float


def test_a_tile_converts_itself_with_to():
    kernel = ninetoothed.make(
        functools.partial(arrangement, BLOCK_SIZE=16), truncate, (Tensor(1), Tensor(1))
    )
    x = torch.randn(100, device=DEVICE) * 10
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y, x.to(torch.int32).float())
