"""Outermost levels of different ranks, paired program by program as upstream pairs them.

Upstream launches one program per tile of the first tensor's outermost level
and has every tensor unravel the program id over its own outermost shape,
row-major (``generation.py``'s ``_generate_pid_indices``).  So ``(1, K)``
against ``(K,)`` pairs tile ``(0, k)`` with tile ``k``, whatever the first
size's form.  Here the same pairing applies to outermost levels of different
ranks, and the launch checks that each holds as many tiles as the grid (where
upstream would mask the extra programs of one tensor and skip the other's).
"""

import os

import pytest
import torch

import ninetoothed
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import LaunchError

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

BLOCK = Symbol("BLOCK", constexpr=True)


def rows(tensor):
    """A 2-D tensor's rows in blocks of BLOCK: outermost ``(rows, column blocks)``."""
    arranged = tensor.tile((1, BLOCK))
    arranged.dtype = arranged.dtype.squeeze(0)
    return arranged


def matrix_then_vector(x, y):
    return rows(x), y.tile((BLOCK,))


def vector_then_matrix(y, x):
    return y.tile((BLOCK,)), rows(x)


def doubled(x, y):
    y = x * 2  # noqa: F841


def doubled_into_first(y, x):
    y = x * 2  # noqa: F841


def test_a_one_row_matrix_against_a_vector():
    """``(1, K)`` against ``(K,)``: the grid is the matrix's, its first size 1 at launch."""
    kernel = ninetoothed.make(matrix_then_vector, doubled, (Tensor(2), Tensor(1)))
    x = torch.randn(1, 100, device=DEVICE)
    y = torch.full((100,), float("nan"), device=DEVICE)

    kernel(x, y, BLOCK=16)  # 7 programs

    torch.testing.assert_close(y, x[0] * 2)


def test_a_vector_against_a_one_row_matrix():
    kernel = ninetoothed.make(vector_then_matrix, doubled_into_first, (Tensor(1), Tensor(2)))
    x = torch.randn(1, 100, device=DEVICE)
    y = torch.full((100,), float("nan"), device=DEVICE)

    kernel(y, x, BLOCK=16)

    torch.testing.assert_close(y, x[0] * 2)


@pytest.mark.parametrize("arrangement", [matrix_then_vector, vector_then_matrix])
def test_more_rows_than_one_are_refused_at_launch(arrangement):
    if arrangement is matrix_then_vector:
        kernel = ninetoothed.make(arrangement, doubled, (Tensor(2), Tensor(1)))
    else:
        kernel = ninetoothed.make(arrangement, doubled_into_first, (Tensor(1), Tensor(2)))
    x = torch.randn(2, 100, device=DEVICE)
    y = torch.full((100,), float("nan"), device=DEVICE)

    with pytest.raises(LaunchError, match="as many tiles as the launch grid has programs"):
        if arrangement is matrix_then_vector:
            kernel(x, y, BLOCK=16)
        else:
            kernel(y, x, BLOCK=16)
    assert y.isnan().all()


def channels_then_rows(x, y):
    """``(N, C, column blocks)`` against ``(N, column blocks)``: C is 1 at launch."""
    arranged = x.tile((1, 1, BLOCK))
    arranged.dtype = arranged.dtype.squeeze((0, 1))
    return arranged, rows(y)


@pytest.mark.parametrize("channels", [1, 2])
def test_a_middle_dimension_of_one_at_launch(channels):
    kernel = ninetoothed.make(channels_then_rows, doubled, (Tensor(3), Tensor(2)))
    x = torch.randn(3, channels, 50, device=DEVICE)
    y = torch.full((3, 50), float("nan"), device=DEVICE)

    if channels != 1:
        with pytest.raises(LaunchError, match="as many tiles as the launch grid has programs"):
            kernel(x, y, BLOCK=16)
        assert y.isnan().all()
        return
    kernel(x, y, BLOCK=16)  # 3 x 1 x 4 programs

    torch.testing.assert_close(y, x[:, 0] * 2)


def test_on_every_framework(framework):
    """The pairing is in the arrangement and its check in the host code: every framework."""
    import numpy as np

    kernel = ninetoothed.make(matrix_then_vector, doubled, (Tensor(2), Tensor(1)))
    x = np.random.default_rng().standard_normal((1, 100)).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((100,), "float32")]

    (y,) = framework.call(kernel, args, {"BLOCK": 16}, outputs=[1])

    np.testing.assert_allclose(y, x[0] * 2)
    with pytest.raises(LaunchError, match="as many tiles as the launch grid has programs"):
        framework.call(
            kernel,
            [
                framework.from_numpy(np.ones((2, 100), np.float32)),
                framework.poisoned((100,), "float32"),
            ],
            {"BLOCK": 16},
            outputs=[1],
        )
