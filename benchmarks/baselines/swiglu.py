"""Hand-written Triton ``swiglu``: ``a * silu(b)``, one program per ``BLOCK_SIZE``
elements (the upstream examples' definition: the second operand is the gate)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import launch
from ._elementwise import flat, grid_for, tune


@tune()
@triton.jit
def swiglu_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """``c = a * b * sigmoid(b)``, in float32, on this program's block."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(c_ptr + offsets, a * b * tl.sigmoid(b), mask=mask)


def swiglu(a: torch.Tensor, b: torch.Tensor, *, config: dict | None = None) -> torch.Tensor:
    """``a * torch.nn.functional.silu(b)`` in a new tensor (one shape for both)."""
    a_flat, b_flat = flat(a, b)
    c = torch.empty_like(a_flat)
    n = c.numel()
    launch(swiglu_kernel, grid_for(n), a_flat, b_flat, c, n, config=config)
    return c.view(a.shape)


KERNELS = (swiglu_kernel,)
"""The kernels this module launches (for the code metrics)."""
