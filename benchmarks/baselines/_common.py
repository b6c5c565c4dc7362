"""What the baselines share: how they are tuned and launched, and small helpers.

On a GPU each baseline is ``triton.autotune``-d over a real configuration space.
Triton's interpreter has no benchmarker (``triton.autotune`` with more than one
configuration fails there), so under ``TRITON_INTERPRET=1`` each kernel gets one
small configuration instead: small blocks, so that even tiny test shapes run
several programs per grid dimension.  Tests can pin any configuration with the
wrappers' ``config=`` argument, on the GPU too (no tuning, one compile).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import triton

INTERPRET = os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")
"""Whether Triton interprets kernels on the CPU (read when this module is imported,
as ``triton.jit`` reads it when a kernel is decorated)."""

SHARED_MEMORY_BUDGET = 200 * 1024
"""Bytes of shared memory a configuration may plan for (an H100/H200 block gets
at most 227 KiB; the rest is left for Triton's own scratch)."""

Prune = Callable[[list[triton.Config], dict[str, Any]], list[triton.Config]]


def config(num_warps: int = 4, num_stages: int = 3, **meta: int) -> triton.Config:
    """A ``triton.Config`` of meta-parameters ``meta``, written the short way."""
    return triton.Config(meta, num_warps=num_warps, num_stages=num_stages)


def autotune(
    configs: Sequence[triton.Config],
    interpret: triton.Config,
    key: list[str],
    prune: Prune | None = None,
) -> Callable:
    """``triton.autotune`` over ``configs`` on a GPU, pruned per call by ``prune``
    (it gets the configurations and the call's named arguments); under the
    interpreter, over ``interpret`` alone."""
    if INTERPRET:
        return triton.autotune(configs=[interpret], key=key)

    def early_prune(candidates: list[triton.Config], named_args: dict, **kwargs: Any) -> list:
        kept = prune(candidates, {**named_args, **kwargs}) if prune else candidates
        return kept or candidates[-1:]

    return triton.autotune(
        configs=list(configs), key=key, prune_configs_by={"early_config_prune": early_prune}
    )


def launch(
    kernel: Any,
    grid: Callable[[dict], tuple[int, ...]],
    *args: Any,
    config: dict | None = None,
    **constexprs: Any,
) -> None:
    """Launch the autotuned ``kernel``; with ``config`` (meta-parameters, and
    optionally ``num_warps`` / ``num_stages``) launch the function it tunes with
    that configuration instead, untuned."""
    if config is None:
        kernel[grid](*args, **constexprs)
    else:
        kernel.fn[grid](*args, **constexprs, **config)


def tuned_config(kernel: Any) -> dict:
    """The configuration ``kernel``'s autotuner chose on its last call, as a
    ``config=`` argument (meta-parameters, ``num_warps``, ``num_stages``)."""
    best = kernel.best_config
    return {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}


def at_most(limit: int, floor: int = 16) -> int:
    """The smallest power of two that is at least ``limit`` and ``floor``: the
    largest block worth trying on a dimension of ``limit`` elements."""
    return max(floor, triton.next_power_of_2(max(1, int(limit))))


def pair(value: int | Sequence[int]) -> tuple[int, int]:
    """A 2-D size given as one number or two (``kernel_size=3`` or ``(3, 2)``)."""
    if isinstance(value, int):
        return (value, value)
    first, second = value
    return (int(first), int(second))


def gemm_configs_that_fit(
    configs: list[triton.Config], rows: int, columns: int, element_size: int
) -> list[triton.Config]:
    """The GEMM tilings (``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K``) worth trying on a
    ``rows`` x ``columns`` output: no tile far larger than the output, no thin
    tile on a tall output (those are for a handful of rows), and the pipelined A
    and B tiles within the shared-memory budget."""
    largest_m, largest_n = at_most(rows), at_most(columns)
    smallest_m = 64 if rows >= 1024 else 16
    kept = []
    for candidate in configs:
        meta = candidate.kwargs
        stage = (meta["BLOCK_M"] + meta["BLOCK_N"]) * meta["BLOCK_K"] * element_size
        if (
            smallest_m <= meta["BLOCK_M"] <= largest_m
            and meta["BLOCK_N"] <= largest_n
            and stage * candidate.num_stages <= SHARED_MEMORY_BUDGET
        ):
            kept.append(candidate)
    return kept
