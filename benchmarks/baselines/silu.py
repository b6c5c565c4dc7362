"""Hand-written Triton ``silu``: one program per ``BLOCK_SIZE`` elements."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import launch
from ._elementwise import flat, grid_for, tune


@tune()
@triton.jit
def silu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """``y = x * sigmoid(x)``, in float32, on this program's block."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, x * tl.sigmoid(x), mask=mask)


def silu(x: torch.Tensor, *, config: dict | None = None) -> torch.Tensor:
    """``torch.nn.functional.silu(x)`` in a new tensor, for any shape."""
    (x_flat,) = flat(x)
    y = torch.empty_like(x_flat)
    n = y.numel()
    launch(silu_kernel, grid_for(n), x_flat, y, n, config=config)
    return y.view(x.shape)


KERNELS = (silu_kernel,)
"""The kernels this module launches (for the code metrics)."""
