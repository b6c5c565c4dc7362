"""Hand-written Triton vector add: one program per ``BLOCK_SIZE`` block."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(
    x_ptr,
    y_ptr,
    z_ptr,
    n_elements,
    x_stride,
    y_stride,
    z_stride,
    BLOCK_SIZE: tl.constexpr,
):
    """``z[i] = x[i] + y[i]`` for the ``BLOCK_SIZE`` elements of this program."""
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    # The last block may run past the end of the vectors.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets * x_stride, mask=mask)
    y = tl.load(y_ptr + offsets * y_stride, mask=mask)
    tl.store(z_ptr + offsets * z_stride, x + y, mask=mask)


CONFIGS = [
    triton.Config({"BLOCK_SIZE": block_size}, num_warps=num_warps)
    for block_size in (256, 512, 1024, 2048, 4096)
    for num_warps in (4, 8)
]

add_kernel_autotuned = triton.autotune(configs=CONFIGS, key=["n_elements"])(add_kernel)


def add(x: torch.Tensor, y: torch.Tensor, config: dict | None = None) -> torch.Tensor:
    """Return ``x + y`` for 1-D tensors of any stride.

    With ``config`` (e.g. ``{"BLOCK_SIZE": 256}``) the untuned kernel is launched
    with those meta-parameters; this keeps interpreter runs cheap.
    """
    assert x.dim() == 1 and x.shape == y.shape, (x.shape, y.shape)
    z = torch.empty_like(x)
    n = x.numel()

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(n, meta["BLOCK_SIZE"]),)

    args = (x, y, z, n, x.stride(0), y.stride(0), z.stride(0))
    if config is None:
        add_kernel_autotuned[grid](*args)
    else:
        add_kernel[grid](*args, **config)
    return z
