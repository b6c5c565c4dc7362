"""Hand-written Triton row-wise softmax: one program per row.

The whole row fits in one block (``BLOCK_SIZE = next_power_of_2(n_cols)``),
matching the NineToothed arrangement ``tile((1, BLOCK_SIZE))``. There is no
autotuning because the NineToothed kernel receives ``BLOCK_SIZE`` explicitly.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(
    input_ptr,
    output_ptr,
    n_cols,
    input_row_stride,
    input_col_stride,
    output_row_stride,
    output_col_stride,
    BLOCK_SIZE: tl.constexpr,
):
    """Softmax of row ``program_id(0)``."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # Padding reads -inf so it neither wins the max nor contributes to the sum.
    x = tl.load(
        input_ptr + row * input_row_stride + cols * input_col_stride,
        mask=mask,
        other=float("-inf"),
    )
    row_minus_max = x - tl.max(x, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    tl.store(
        output_ptr + row * output_row_stride + cols * output_col_stride,
        numerator / denominator,
        mask=mask,
    )


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Return ``softmax(x, dim=-1)`` for a 2-D tensor of any strides."""
    assert x.dim() == 2, x.shape
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](
        x,
        y,
        n_cols,
        *x.stride(),
        *y.stride(),
        BLOCK_SIZE=triton.next_power_of_2(n_cols),
    )
    return y
