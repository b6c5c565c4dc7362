"""Diagnostic versions of our matrix multiplication for the benchmarks.

Every task's "ours" is the kernel library's op (``nt_torch.ops``); these build
the library's ``mm`` arrangement and application with the hand-written
baseline's tuning space, or with its chosen configuration, so that a
comparison can separate generated code from two autotuners' choices
(the ``mm_same_space`` and ``mm_same_config`` tasks, run only when named).
"""

from __future__ import annotations

import functools

import torch

import ninetoothed
from ninetoothed import Tensor


def _matmul_kernel_for(baseline_configs: list[dict]) -> ninetoothed.Kernel:
    """The seed matmul, tuned over ``baseline_configs`` (the baseline's names, e.g.
    ``BLOCK_M``, translated to the arrangement's meta symbols)."""
    from ninetoothed.library import mm as example

    block_m, block_n, block_k = example.arrangement.__defaults__
    names = {"BLOCK_M": block_m.name, "BLOCK_N": block_n.name, "BLOCK_K": block_k.name}
    configs = [
        {names.get(key, key): value for key, value in c.items() if key != "GROUP_M"}
        for c in baseline_configs
    ]
    return ninetoothed.make(
        example.arrangement,
        example.application,
        (Tensor(2), Tensor(2), Tensor(2)),
        configs=configs,
    )


@functools.cache
def _matmul_same_space_kernel() -> ninetoothed.Kernel:
    # The hand-written baseline's tuning space, pinned: compares the generated
    # code, not the two tuning spaces.
    from baselines.mm import CONFIGS

    return _matmul_kernel_for(
        [{**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages} for c in CONFIGS]
    )


@functools.cache
def _matmul_one_config_kernel(config: tuple[tuple[str, int], ...]) -> ninetoothed.Kernel:
    return _matmul_kernel_for([dict(config)])


def matmul_same_config(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` by the NineToothed kernel with the configuration the baseline's
    autotuner chose: the generated code against the hand-written, with no
    tuning noise (two autotuners can pick different winners run to run)."""
    from baselines.mm import mm_tuned_config

    chosen = {k: v for k, v in mm_tuned_config(a, b).items() if k != "GROUP_M"}
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _matmul_one_config_kernel(tuple(sorted(chosen.items())))(a, b, c)
    return c


def matmul_same_space(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` by the NineToothed kernel tuned over the baseline's configurations."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _matmul_same_space_kernel()(a, b, c)
    return c
