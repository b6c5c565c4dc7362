"""The row-wise ops: ``softmax``, ``rms_norm``, ``fused_add_rms_norm``.

Each program holds one whole row; the kernel is made for the tensor's rank,
so batch dimensions and strides need no reshaping.
"""

from __future__ import annotations

import operator
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.library import fused_add_rms_norm as fused_kernel
from ninetoothed.library import rms_norm as rms_norm_kernel
from ninetoothed.library import softmax as softmax_kernel
from ninetoothed.library.ops import _common as common
from ninetoothed.library.ops.framework import Framework, HostTensor
from ninetoothed.library.ops.kernels import kernel

__all__ = ["MAX_ROW", "fused_add_rms_norm", "rms_norm", "softmax"]

MAX_ROW = 1 << 16
"""The longest row one program holds (65,536 elements)."""


def _row(op: str, shape: tuple[int, ...], dim: int = -1) -> int:
    """The length of the rows along ``dim``, which must fit one program."""
    if not shape:
        raise LaunchError(f"{op}: the input must have at least one dimension")
    if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):  # as torch refuses
        raise LaunchError(f"{op}: dim must be an int, got {type(dim).__name__} {dim!r}")
    dim = operator.index(dim)
    if not -len(shape) <= dim < len(shape):
        raise LaunchError(f"{op}: dim {dim} is out of range for shape {shape}")
    length = shape[dim]
    if length > MAX_ROW:
        raise LaunchError(f"{op}: rows of {length} elements are longer than {MAX_ROW}")
    return length


def softmax(framework: Framework, input: HostTensor, dim: int = -1) -> HostTensor:
    """``softmax`` along ``dim`` in a new tensor (like ``torch.softmax(input, dim)``).

    Any rank and strides, float16, bfloat16 or float32 (computed in float32);
    rows of up to 65,536 elements.
    """
    info = common.describe(framework, "softmax", input=input)["input"]
    length = _row("softmax", info.shape, dim)
    ndim = len(info.shape)
    warps = common.warps_for_row(length)
    found = kernel(softmax_kernel, ndim=ndim, dim=int(dim) % ndim, num_warps=warps)
    (output,) = framework.run(found, [input, framework.empty(input, info.shape)], [1])
    return output


def _weight(op: str, weight: Any, infos: dict[str, Any], length: int) -> None:
    if weight is not None and infos["weight"].shape != (length,):
        raise LaunchError(f"{op}: weight must have shape ({length},), got {infos['weight'].shape}")


def rms_norm(
    framework: Framework, input: HostTensor, weight: HostTensor | None = None, eps: float = 1e-6
) -> HostTensor:
    """``input * rsqrt(mean(input**2) + eps) * weight`` over the last dimension, in a
    new tensor (like ``torch.nn.functional.rms_norm(input, input.shape[-1:], weight, eps)``).

    Any rank and strides; ``weight`` (last dimension's size) is optional; float16,
    bfloat16 or float32, all the same (computed in float32); rows of up to
    65,536 elements.
    """
    tensors = {"input": input} | ({} if weight is None else {"weight": weight})
    infos = common.describe(framework, "rms_norm", **tensors)
    shape = infos["input"].shape
    length = _row("rms_norm", shape)
    _weight("rms_norm", weight, infos, length)
    warps = common.warps_for_row(length)
    found = kernel(rms_norm_kernel, ndim=len(shape), weighted=weight is not None, num_warps=warps)
    arguments = [input, *([] if weight is None else [weight]), float(eps)]
    arguments.append(framework.empty(input, shape))
    (output,) = framework.run(found, arguments, [len(arguments) - 1])
    return output


def fused_add_rms_norm(
    framework: Framework,
    input: HostTensor,
    residual: HostTensor,
    weight: HostTensor,
    eps: float = 1e-6,
) -> tuple[HostTensor, HostTensor]:
    """``sum = input + residual`` and ``rms_norm(sum, weight, eps)`` in one pass; returns
    ``(normalised, sum)``, two new tensors.

    ``input`` and ``residual`` of one shape, any rank and strides; ``weight`` of
    the last dimension's size; float16, bfloat16 or float32, all the same.  The
    sum is rounded to the dtype and normalised as rounded, as the two ops
    unfused would; rows of up to 65,536 elements.
    """
    infos = common.describe(
        framework, "fused_add_rms_norm", input=input, residual=residual, weight=weight
    )
    shape = infos["input"].shape
    if infos["residual"].shape != shape:
        raise LaunchError(
            f"fused_add_rms_norm: residual must have input's shape {shape}, "
            f"got {infos['residual'].shape}"
        )
    length = _row("fused_add_rms_norm", shape)
    _weight("fused_add_rms_norm", weight, infos, length)
    found = kernel(fused_kernel, ndim=len(shape), num_warps=common.warps_for_row(length))
    outputs = [framework.empty(input, shape), framework.empty(input, shape)]
    normalised, total = framework.run(
        found, [input, residual, weight, float(eps), *outputs], [4, 5]
    )
    return normalised, total
