"""Hand-written Triton ``add``: one program per ``BLOCK_SIZE`` elements."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import launch
from ._elementwise import flat, grid_for, tune


@tune()
@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """``z = x + y`` on this program's block of the flattened tensors."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, *, config: dict | None = None) -> torch.Tensor:
    """``x + y`` for two tensors of one shape and dtype, in a new tensor.

    ``config`` (e.g. ``{"BLOCK_SIZE": 256}``) launches that configuration untuned.
    """
    x_flat, y_flat = flat(x, y)
    z = torch.empty_like(x_flat)
    n = z.numel()
    launch(add_kernel, grid_for(n), x_flat, y_flat, z, n, config=config)
    return z.view(x.shape)


KERNELS = (add_kernel,)
"""The kernels this module launches (for the code metrics)."""
