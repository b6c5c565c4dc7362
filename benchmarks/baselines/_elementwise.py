"""What the element-wise baselines (add, silu, swiglu) share: their tuning space
and how a flat launch over every element is set up."""

from __future__ import annotations

import torch
import triton

from ._common import autotune, config

CONFIGS = [
    config(BLOCK_SIZE=block_size, num_warps=num_warps)
    for block_size in (1024, 2048, 4096, 8192)
    for num_warps in (4, 8)
]
"""One program per ``BLOCK_SIZE`` elements; large blocks keep many 16-byte loads
in flight per thread, which is what a memory-bound kernel needs."""

INTERPRET_CONFIG = config(BLOCK_SIZE=64)


def tune() -> object:
    """The autotuning decorator of an element-wise kernel (key: element count)."""
    return autotune(CONFIGS, INTERPRET_CONFIG, key=["n_elements"])


def flat(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """The tensors as contiguous 1-D views (a copy only where one is strided);
    all must have the first one's shape."""
    shape = tensors[0].shape
    for tensor in tensors:
        if tensor.shape != shape:
            raise ValueError(f"shapes differ: {tuple(shape)} and {tuple(tensor.shape)}")
    return [tensor.contiguous().view(-1) for tensor in tensors]


def grid_for(n_elements: int):
    """The launch grid of a flat kernel over ``n_elements``."""

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    return grid
