"""Bool tensors for parameters declared int8 or uint8.

Upstream has no bool dtype constant, so its programs declare bool data as
``ninetoothed.int8`` (ntops's ``all`` writes a ``torch.bool`` output declared
``dtype="int8"``).  A bool tensor stores one byte of 0 or 1 per element, as
Triton's own bool pointers do, so such a call is accepted; other mismatches
run on the argument's dtype with a warning, as every just-in-time kernel's.
"""

import functools
import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor
from ninetoothed.errors import DeclaredDtypeWarning

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def rows(x, out, block_size):
    x_arranged = x.tile((1, block_size))
    x_arranged.dtype = x_arranged.dtype.squeeze(0)
    return x_arranged, out.tile((1,))


def all_nonzero(x, out):
    out = ntl.min(ntl.where(x != 0, 1, 0), axis=0)  # noqa: F841


def not_(x, out):
    out = x == 0  # noqa: F841


@pytest.mark.parametrize("declared", [ninetoothed.int8, ninetoothed.uint8, "int8"])
def test_bool_output_declared_as_bytes(declared):
    arrangement = functools.partial(rows, block_size=64)
    tensors = (Tensor(2, other=1), Tensor(1, dtype=declared))
    kernel = ninetoothed.make(arrangement, all_nonzero, tensors)
    x = (torch.rand(37, 45, device=DEVICE) > 0.02).float()
    out = torch.arange(37, device=DEVICE) % 2 == 0  # poisoned: alternating

    kernel(x, out)

    assert torch.equal(out, x.bool().all(1))


def test_bool_input_and_output_declared_as_bytes():
    tensors = (Tensor(2, dtype=ninetoothed.uint8), Tensor(2, dtype=ninetoothed.int8))
    kernel = ninetoothed.make(lambda x, out: (x.tile((4, 16)), out.tile((4, 16))), not_, tensors)
    x = torch.rand(13, 37, device=DEVICE) > 0.5
    out = torch.rand(13, 37, device=DEVICE) > 0.5  # poisoned: random

    kernel(x, out)

    assert torch.equal(out, ~x)


def test_other_mismatches_run_on_the_arguments_dtype_with_a_warning():
    kernel = ninetoothed.make(
        lambda x, out: (x.tile((16,)), out.tile((16,))),
        not_,
        (Tensor(1), Tensor(1, dtype=ninetoothed.float32)),
    )
    x = torch.randn(37, device=DEVICE)
    x[::3] = 0
    for dtype in (torch.int64, torch.bool):
        out = torch.full((37,), 7, dtype=dtype, device=DEVICE)
        name = str(dtype).rsplit(".", 1)[-1]
        with pytest.warns(DeclaredDtypeWarning, match=f"'out' expects dtype float32, got {name}"):
            kernel(x, out)
        assert torch.equal(out, (x == 0).to(dtype))
