"""Launches that skip tuning on a GPU (JAX's buffer callbacks) take the first
configuration that fits the GPU for the call's element sizes.

The space is estimated for 2-byte elements, so a float32 call's first
configuration may ask for more shared memory than the GPU has: Triton refuses
that launch before it runs (``OutOfResources``) and the next one is tried.  The
launch itself is replaced by a recording fake here (no GPU).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from triton.runtime.errors import OutOfResources

import ninetoothed
from ninetoothed import Tensor, block_size
from ninetoothed.errors import LaunchError


def arrangement(x, y, BLOCK_SIZE=block_size(16, 128)):  # noqa: B008 - the DSL's idiom
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def application(x, y):
    y = x  # noqa: F841


def kernel_and_runs(too_big: int) -> tuple[Any, list[dict[str, Any]]]:
    """A kernel whose first ``too_big`` configurations fail as out of resources."""
    made = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)), max_num_configs=4)
    generated = made.generated
    assert len(generated.configurations) >= 3
    runs: list[dict[str, Any]] = []

    def run_with(plan: Any, meta: Any, warps: int, stages: int, cap: Any) -> None:
        runs.append(dict(meta))
        if len(runs) <= too_big:
            error = LaunchError("kernel 'application': out of resource: shared memory")
            raise error from OutOfResources(327680, 232448, "shared memory")

    generated._run_with = run_with
    return generated, runs


def plan(dtype: torch.dtype) -> Any:
    return SimpleNamespace(arguments=[torch.zeros(4, dtype=dtype)] * 2, meta=None)


def test_the_next_configuration_runs_when_one_does_not_fit_and_is_remembered():
    generated, runs = kernel_and_runs(too_big=1)
    first, second = (c.kwargs() for c in generated.configurations[:2])
    generated._run_untuned(plan(torch.float32))
    assert runs == [first, second]
    generated._run_untuned(plan(torch.float32))  # starts where it fitted
    assert runs == [first, second, second]


def test_what_fits_is_remembered_per_element_size():
    generated, runs = kernel_and_runs(too_big=1)
    generated._run_untuned(plan(torch.float32))
    generated._run_untuned(plan(torch.float16))  # a new element size starts from the first
    assert len(runs) == 3 and runs[2] == generated.configurations[0].kwargs()


def test_other_failures_and_a_space_that_never_fits_raise():
    generated, runs = kernel_and_runs(too_big=100)
    with pytest.raises(LaunchError, match="out of resource"):
        generated._run_untuned(plan(torch.float32))
    assert len(runs) == len(generated.configurations)

    generated, runs = kernel_and_runs(too_big=0)

    def failing(*arguments: Any) -> None:
        runs.append({})
        raise LaunchError("kernel 'application': something else")

    generated._run_with = failing
    with pytest.raises(LaunchError, match="something else"):
        generated._run_untuned(plan(torch.float32))
    assert len(runs) == 1
