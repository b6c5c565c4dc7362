"""NineToothed ("ours") versions of the benchmark kernels.

Written with the public API exactly as in the NineToothed tutorial and paper.
Each kernel is built on first use, so one kernel failing to build does not
prevent the others from being benchmarked.
"""

from __future__ import annotations

import functools

import torch
import triton

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

# --- vector add ---------------------------------------------------------------


# A block_size() default is how the API asks NineToothed to autotune the size.
def add_arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def add_application(x, y, z):
    z = x + y  # noqa: F841 (NineToothed turns this assignment into a store)


@functools.cache
def _add_kernel():
    return ninetoothed.make(add_arrangement, add_application, (Tensor(1), Tensor(1), Tensor(1)))


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return ``x + y`` computed by the NineToothed kernel."""
    z = torch.empty_like(x)
    _add_kernel()(x, y, z)
    return z


# --- matmul -------------------------------------------------------------------

BLOCK_SIZE_M = ninetoothed.block_size()
BLOCK_SIZE_N = ninetoothed.block_size()
BLOCK_SIZE_K = ninetoothed.block_size()


def matmul_arrangement(input, other, output):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def matmul_application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    output = accumulator  # the store casts to output's dtype


@functools.cache
def _matmul_kernel():
    return ninetoothed.make(
        matmul_arrangement, matmul_application, (Tensor(2), Tensor(2), Tensor(2))
    )


@functools.cache
def _matmul_same_space_kernel():
    # The hand-written baseline's tuning space, pinned: compares the generated
    # code, not the two tuning spaces.
    from baselines.matmul import CONFIGS

    names = {
        "BLOCK_M": BLOCK_SIZE_M.name,
        "BLOCK_N": BLOCK_SIZE_N.name,
        "BLOCK_K": BLOCK_SIZE_K.name,
    }
    configs = [
        {
            **{names[k]: v for k, v in c.kwargs.items()},
            "num_warps": c.num_warps,
            "num_stages": c.num_stages,
        }
        for c in CONFIGS
    ]
    return ninetoothed.make(
        matmul_arrangement,
        matmul_application,
        (Tensor(2), Tensor(2), Tensor(2)),
        configs=configs,
    )


def matmul_same_space(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` by the NineToothed kernel tuned over the baseline's configurations."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _matmul_same_space_kernel()(a, b, c)
    return c


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return ``a @ b`` computed by the NineToothed kernel."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _matmul_kernel()(a, b, c)
    return c


# --- softmax ------------------------------------------------------------------

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def softmax_arrangement(input, output, BLOCK_SIZE=BLOCK_SIZE):
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def softmax_application(input, output):
    row_minus_max = input - ntl.max(input)
    numerator = ntl.exp(row_minus_max)
    denominator = ntl.sum(numerator)
    output = numerator / denominator  # noqa: F841


@functools.cache
def _softmax_kernel():
    # other=-inf: padding must not win the max nor add to the sum.
    return ninetoothed.make(
        softmax_arrangement,
        softmax_application,
        (Tensor(2, other=float("-inf")), Tensor(2)),
    )


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return ``softmax(x, dim=-1)`` computed by the NineToothed kernel."""
    y = torch.empty_like(x)
    _softmax_kernel()(x, y, BLOCK_SIZE=triton.next_power_of_2(x.shape[-1]))
    return y
