"""Hand-written Triton ``rms_norm``: one program per row, the whole row in registers.

The row is read once, squared and summed in float32, scaled by
``rsqrt(mean + eps)`` (and by the weight, when there is one) and written once:
the single pass of the Triton tutorials' layer norm for rows that fit a block
(up to 65,536 elements).  With a residual the same program first adds it and
also writes the sum: the fused residual-add + rms_norm of a transformer block.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import autotune, config, launch

CONFIGS = [config(num_warps=num_warps) for num_warps in (2, 4, 8, 16)]

INTERPRET_CONFIG = config()

MAX_ROW = 65536
"""The longest row one program holds."""


def _prune(configs: list[triton.Config], args: dict) -> list[triton.Config]:
    """At least 32 row elements per warp: more warps than that only wait."""
    return [c for c in configs if c.num_warps * 32 <= max(64, args["BLOCK_N"] // 4)]


@autotune(CONFIGS, INTERPRET_CONFIG, key=["N", "HAS_RESIDUAL", "HAS_WEIGHT"], prune=_prune)
@triton.jit
def rms_norm_kernel(
    x_ptr,
    r_ptr,
    w_ptr,
    y_ptr,
    h_ptr,
    N,
    stride_x,
    stride_r,
    stride_y,
    stride_h,
    eps,
    HAS_RESIDUAL: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Normalise row ``program_id(0)``: ``y = h * rsqrt(mean(h**2) + eps) * w`` with
    ``h = x`` (or ``h = x + r``, written to ``h_ptr``, when ``HAS_RESIDUAL``)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    h = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        h += tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        # Normalise the sum as stored, like an unfused add followed by rms_norm.
        stored = h.to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + row * stride_h + cols, stored, mask=mask)
        h = stored.to(tl.float32)
    y = h * tl.rsqrt(tl.sum(h * h, axis=0) / N + eps)
    if HAS_WEIGHT:
        y *= tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rows_of(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a 2-D (rows, last dimension) tensor whose rows are contiguous."""
    if x.shape[-1] > MAX_ROW:
        raise ValueError(f"rows longer than {MAX_ROW} elements are not supported")
    rows = x.reshape(-1, x.shape[-1])
    return rows if rows.stride(-1) == 1 else rows.contiguous()


def normalise(
    x: torch.Tensor,
    residual: torch.Tensor | None,
    weight: torch.Tensor | None,
    eps: float,
    config: dict | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Launch the kernel over every row of ``x``; return the output and, with a
    residual, the sum ``x + residual``."""
    x2 = rows_of(x)
    n_rows, n = x2.shape
    y = torch.empty_like(x2)
    r2 = rows_of(residual) if residual is not None else x2
    h = torch.empty_like(x2) if residual is not None else y
    w = weight.contiguous() if weight is not None else x2
    launch(
        rms_norm_kernel,
        lambda meta: (n_rows,),
        x2,
        r2,
        w,
        y,
        h,
        n,
        x2.stride(0),
        r2.stride(0),
        y.stride(0),
        h.stride(0),
        float(eps),
        HAS_RESIDUAL=residual is not None,
        HAS_WEIGHT=weight is not None,
        BLOCK_N=triton.next_power_of_2(n),
        config=config,
    )
    return y.view(x.shape), (h.view(x.shape) if residual is not None else None)


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    *,
    config: dict | None = None,
) -> torch.Tensor:
    """``torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)`` in a new
    tensor: over the last dimension, in float32, ``weight`` optional."""
    return normalise(x, None, weight, eps, config)[0]


KERNELS = (rms_norm_kernel,)
"""The kernels this module launches (for the code metrics)."""
