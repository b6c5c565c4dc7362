"""Meta symbols declared ``power_of_two=False``: every integer between the bounds.

Upstream's tuning space for such a symbol is ``range(lower_bound,
upper_bound + 1)`` (its ``generation.py``), but upstream sizes ``tl.arange``
with the value itself, which Triton refuses unless it is a power of two.
Here a tile of such a size is loaded padded to the next power of two, and
the padding is masked, so every value gives the right result.
"""

import os

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

ROWS = Symbol("ROWS", meta=True, power_of_two=False, lower_bound=3, upper_bound=5)
COLUMNS = Symbol("COLUMNS", meta=True, power_of_two=False, lower_bound=6, upper_bound=7)


def rows_and_columns(x, y):
    return x.tile((ROWS, COLUMNS)), y.tile((ROWS, COLUMNS))


def doubled(x, y):
    y = x * 2  # noqa: F841


def test_the_space_is_every_integer_between_the_bounds():
    from nt_triton._codegen.meta_values import (
        symbol_values,  # ours (upstream's lives in its generator)
    )

    assert symbol_values(ROWS) == [3, 4, 5]
    assert symbol_values(Symbol("B", meta=True, power_of_two=False, lower_bound=40)) == list(
        range(40, 1025)
    )
    # The default (power_of_two unset) stays powers of two, as upstream's.
    assert symbol_values(Symbol("B", meta=True, lower_bound=40, upper_bound=200)) == [64, 128]


def test_auto_tuned():
    kernel = ninetoothed.make(rows_and_columns, doubled, (Tensor(2), Tensor(2)))
    x = torch.randn(37, 50, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y, x * 2)


@pytest.mark.parametrize("rows", [3, 4, 5])
@pytest.mark.parametrize("columns", [6, 7])
def test_every_value_pinned_at_the_call(rows, columns):
    # 37 x 50 in tiles of 3..5 x 6..7: 8 to 13 by 8 programs, ragged edges.
    kernel = ninetoothed.make(rows_and_columns, doubled, (Tensor(2), Tensor(2)))
    x = torch.randn(37, 50, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y, ROWS=rows, COLUMNS=columns)

    torch.testing.assert_close(y, x * 2)


def test_bounds_without_a_power_of_two_between_them():
    """Refused here before (no power of two between 48 and 48): upstream takes 48."""
    only = Symbol("ONLY", meta=True, power_of_two=False, lower_bound=48, upper_bound=48)

    def tiles(x, y):
        return x.tile((only,)), y.tile((only,))

    kernel = ninetoothed.make(tiles, doubled, (Tensor(1), Tensor(1)))
    x = torch.randn(300, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y, x * 2)


def test_a_power_of_two_symbol_still_refuses_other_values():
    kernel = ninetoothed.make(
        lambda x, y: (x.tile((Symbol("P", meta=True),)), y.tile((Symbol("P", meta=True),))),
        doubled,
        (Tensor(1), Tensor(1)),
    )
    x = torch.randn(30, device=DEVICE)
    with pytest.raises(ValueError, match="takes powers of two.*power_of_two=False.*got 5"):
        kernel(x, torch.empty_like(x), P=5)


BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M", meta=True, lower_bound=16, upper_bound=16)
BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N", meta=True, lower_bound=16, upper_bound=16)
BLOCK_SIZE_K = Symbol("BLOCK_SIZE_K", meta=True, power_of_two=False, lower_bound=17, upper_bound=24)


def matmul_arrangement(input, other, output):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def matmul_application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator  # noqa: F841


@pytest.mark.parametrize("block_size_k", [None, 17, 20, 24])
def test_a_matmul_over_blocks_of_k_that_are_not_powers_of_two(block_size_k):
    """The padding of each K block must read zeros, or the dot adds what lies beyond."""
    kernel = ninetoothed.make(
        matmul_arrangement, matmul_application, (Tensor(2), Tensor(2), Tensor(2))
    )
    # float16 operands: the GPU's dot takes float32 ones as tf32, too coarse for the check.
    a = torch.randn(40, 70, device=DEVICE, dtype=torch.float16)
    b = torch.randn(70, 35, device=DEVICE, dtype=torch.float16)
    c = torch.full((40, 35), float("nan"), device=DEVICE)

    pinned = {} if block_size_k is None else {"BLOCK_SIZE_K": block_size_k}
    pinned |= {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16} if pinned else {}
    kernel(a, b, c, **pinned)

    torch.testing.assert_close(c, (a.double() @ b.double()).float(), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("pinned", [{}, {"ROWS": 5, "COLUMNS": 7}])
def test_on_every_framework(framework, pinned):
    """The padded tile sizes reach each framework's launch path (tuned or pinned)."""
    kernel = ninetoothed.make(rows_and_columns, doubled, (Tensor(2), Tensor(2)))
    x = np.random.default_rng().standard_normal((37, 50)).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((37, 50), "float32")]

    (y,) = framework.call(kernel, args, dict(pinned), outputs=[1])

    np.testing.assert_allclose(y, x * 2)
