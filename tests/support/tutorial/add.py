"""Vector addition, as in "The Basics" (make style) and the README (jit style)."""

import ninetoothed
from ninetoothed import Symbol, Tensor


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    z = x + y  # noqa: F841 - assigning to a parameter stores its tile


kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))

BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True)


@ninetoothed.jit
def add_kernel(
    x: Tensor(1).tile((BLOCK_SIZE,)),
    y: Tensor(1).tile((BLOCK_SIZE,)),
    z: Tensor(1).tile((BLOCK_SIZE,)),
):
    z = x + y  # noqa: F841


CONSTEXPR_BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def constexpr_arrangement(input, other, output, BLOCK_SIZE=CONSTEXPR_BLOCK_SIZE):
    return input.tile((BLOCK_SIZE,)), other.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def constexpr_application(input, other, output):
    output = input + other  # noqa: F841


constexpr_kernel = ninetoothed.make(
    constexpr_arrangement, constexpr_application, tuple(Tensor(1) for _ in range(3))
)
