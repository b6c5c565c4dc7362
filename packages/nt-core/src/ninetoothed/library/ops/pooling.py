"""The pooling op: ``max_pool2d``."""

from __future__ import annotations

from collections.abc import Sequence

from ninetoothed.errors import LaunchError
from ninetoothed.library import max_pool2d as max_pool2d_kernel
from ninetoothed.library.ops import _common as common
from ninetoothed.library.ops.framework import Framework, HostTensor
from ninetoothed.library.ops.kernels import kernel

__all__ = ["max_pool2d"]


def max_pool2d(
    framework: Framework,
    input: HostTensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> HostTensor:
    """The maximum of each window of an (N, C, H, W) input, in a new (N, C, P, Q) tensor
    (like ``torch.nn.functional.max_pool2d`` without dilation and ceil mode).

    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` (at most
    half the window; padding never wins): an int or a pair.  Float16, bfloat16 or
    float32; any strides.
    """
    op = "max_pool2d"
    info = common.describe(framework, op, input=input)["input"]
    common.rank(op, "input", info, 4)
    window = common.pair(op, "kernel_size", kernel_size)
    steps = window if stride is None else common.pair(op, "stride", stride)
    pads = common.pair(op, "padding", padding)
    if 0 in window or 0 in steps or any(2 * p > k for p, k in zip(pads, window)):
        raise LaunchError(
            f"{op}: kernel_size and stride must be positive and padding at most half the "
            f"window; got {window}, {steps}, {pads}"
        )
    n, c, h, w = info.shape
    p = (h + 2 * pads[0] - window[0]) // steps[0] + 1
    q = (w + 2 * pads[1] - window[1]) // steps[1] + 1
    if p <= 0 or q <= 0:
        raise LaunchError(f"{op}: the window {window} does not fit the input ({h}, {w})")
    found = kernel(max_pool2d_kernel, window=window, stride=steps, padding=pads)
    return framework.run(found, [input, framework.empty(input, (n, c, p, q))], [1])[0]
