"""NineToothed ("ours") versions of the benchmark kernels.

The kernels are the seed documents' own, defined once in ``nt_examples``
(the tests and the demo use the same definitions); this module only wraps
them as functions that allocate their outputs.  Each kernel is built on first
use, so one failing to build does not stop the others from being benchmarked.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for nt_examples

import ninetoothed  # noqa: E402
from ninetoothed import Tensor  # noqa: E402


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return ``x + y`` computed by the NineToothed kernel."""
    from nt_examples import add as example

    z = torch.empty_like(x)
    example.kernel(x, y, z)
    return z


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return ``a @ b`` computed by the NineToothed kernel (its default tuning space)."""
    from nt_examples import matmul as example

    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    example.kernel(a, b, c)
    return c


def _matmul_kernel_for(baseline_configs: list[dict]) -> ninetoothed.Kernel:
    """The seed matmul, tuned over ``baseline_configs`` (the baseline's names, e.g.
    ``BLOCK_M``, translated to the arrangement's meta symbols)."""
    from nt_examples import matmul as example

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


def addmm(
    input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, *, beta: float, alpha: float
) -> torch.Tensor:
    """Return ``beta * input + alpha * (mat1 @ mat2)`` computed by the NineToothed kernel."""
    from nt_examples import addmm as example

    output = torch.empty((mat1.shape[0], mat2.shape[1]), dtype=mat1.dtype, device=mat1.device)
    example.kernel(input.expand_as(output), mat1, mat2, beta, alpha, output)
    return output


def conv2d(input: torch.Tensor, filter: torch.Tensor) -> torch.Tensor:
    """Return the unpadded, unit-stride ``conv2d`` computed by the NineToothed kernel."""
    from nt_examples import conv2d as example

    n, _, h, w = input.shape
    k, _, r, s = filter.shape
    output = torch.empty((n, k, h - r + 1, w - s + 1), dtype=input.dtype, device=input.device)
    example.kernel(input, filter, output)
    return output


def silu(x: torch.Tensor) -> torch.Tensor:
    """Return ``silu(x)`` (1-D) computed by the NineToothed kernel."""
    from nt_examples import elementwise as example

    y = torch.empty_like(x)
    example.silu_kernel(x, y)
    return y


def sdpa_causal(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = True
) -> torch.Tensor:
    """Return causal attention (B, H, L, D) computed by the NineToothed kernel
    (which is causal only)."""
    from nt_examples import attention as example

    if not is_causal:
        raise NotImplementedError("the seed attention kernel is causal only")
    o = torch.empty_like(q)
    example.kernel(q, k, v, 1.0 / q.shape[-1] ** 0.5, o)
    return o


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return ``softmax(x, dim=-1)`` computed by the NineToothed kernel."""
    from nt_examples import softmax as example

    y = torch.empty_like(x)
    example.kernel(x, y, BLOCK_SIZE=triton.next_power_of_2(x.shape[-1]))
    return y
