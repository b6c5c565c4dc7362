"""Vector addition written as upstream NineToothed programs are: ``make`` and ``jit``."""

import functools
import os

import torch

import ninetoothed
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    z = x + y


BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


@ninetoothed.jit
def add_kernel(
    x: Tensor(1).tile((BLOCK_SIZE,)),
    y: Tensor(1).tile((BLOCK_SIZE,)),
    z: Tensor(1).tile((BLOCK_SIZE,)),
):
    z = x + y


def test_make_with_a_pinned_block_size():
    tensors = (Tensor(1), Tensor(1), Tensor(1))
    kernel = ninetoothed.make(functools.partial(arrangement, BLOCK_SIZE=64), application, tensors)
    x = torch.randn(1000, device=DEVICE)
    y = torch.randn(1000, device=DEVICE)
    z = torch.full_like(x, float("nan"))

    kernel(x, y, z)

    torch.testing.assert_close(z, x + y)


def test_make_with_an_auto_tuned_block_size_and_strided_input():
    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    x = torch.randn(2 * 333, device=DEVICE)[::2]
    y = torch.randn(333, device=DEVICE)
    z = torch.full_like(y, float("nan"))

    kernel(x, y, z)

    torch.testing.assert_close(z, x + y)


def test_jit_with_a_constexpr_block_size_given_at_the_call():
    x = torch.randn(300, dtype=torch.float16, device=DEVICE)
    y = torch.randn(300, dtype=torch.float16, device=DEVICE)
    z = torch.full_like(x, float("nan"))

    add_kernel(x, y, z, BLOCK_SIZE=128)

    torch.testing.assert_close(z, x + y)
