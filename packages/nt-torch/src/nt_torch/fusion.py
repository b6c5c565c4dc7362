"""Under ``torch.compile``, the library's element-wise and row-wise kernels as PyTorch ops.

Inductor cannot fuse into a user Triton kernel: a block of ``rms_norm -> mm ->
silu -> add`` handed over kernel by kernel is four launches, where torch's own
ops compile to three (a normalisation kernel, cuBLAS, one kernel for the
activation and the residual).  So where Inductor is handed our kernels
(:func:`nt_torch.inductor.reason` is None), a launch of a library kernel that
only maps elements or rows (``add``, ``silu``, ``swiglu``, ``rms_norm``,
``fused_add_rms_norm``, ``softmax``, ``rotary_position_embedding``) is traced
as the same computation in PyTorch's ops instead (:data:`COMPOSITES`), which
Inductor lowers and fuses with its neighbours; products, attention, and every
kernel of the user's keep being launched as our kernels.  Each composite
computes as the kernel does: in float32, rounded once into the output the op
allocated (``fused_add_rms_norm`` normalises the sum as rounded).

Eager calls, Triton's interpreter, tensors off the GPU, ``torch.export`` and
``NINETOOTHED_COMPILED_LAUNCH=operator`` keep our kernels;
``NINETOOTHED_COMPILED_FUSION=off`` (or ``0``) keeps them under Inductor too.
A kernel's work is found by the library's record of what it made
(:func:`ninetoothed.library.ops.kernels.origin`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from ninetoothed.library.ops.kernels import origin
from ninetoothed.runtime.hookspecs import GeneratedKernel
from nt_torch._optional import switched_on

__all__ = ["COMPOSITES", "KNOB", "composite", "enabled"]

KNOB = "NINETOOTHED_COMPILED_FUSION"
"""``off``, ``0``, ``false`` or ``no``: compiled calls launch every library kernel."""

Composite = Callable[..., None]
"""``(variant, *kernel arguments)``: writes the kernel's outputs (its arguments) with
PyTorch's ops."""


def _add(variant: Mapping[str, Any], input: Any, other: Any, output: Any) -> None:
    output.copy_(input.float() + other.float())


def _silu(variant: Mapping[str, Any], input: Any, output: Any) -> None:
    output.copy_(torch.nn.functional.silu(input.float()))


def _swiglu(variant: Mapping[str, Any], a: Any, b: Any, output: Any) -> None:
    output.copy_(a.float() * torch.nn.functional.silu(b.float()))


def _normalized(row: Any, eps: Any) -> Any:
    """``row * rsqrt(mean(row**2) + eps)`` over the last dimension (``row`` in float32)."""
    return row * torch.rsqrt(row.square().mean(-1, keepdim=True) + eps)


def _rms_norm(variant: Mapping[str, Any], input: Any, *rest: Any) -> None:
    weight, eps, output = rest if variant["weighted"] else (None, *rest)
    normalized = _normalized(input.float(), eps)
    output.copy_(normalized if weight is None else normalized * weight.float())


def _fused_add_rms_norm(
    variant: Mapping[str, Any],
    input: Any,
    residual: Any,
    weight: Any,
    eps: Any,
    output: Any,
    total: Any,
) -> None:
    rounded = (input.float() + residual.float()).to(input.dtype)  # as the kernel stores it
    total.copy_(rounded)
    output.copy_(_normalized(rounded.float(), eps) * weight.float())


def _softmax(variant: Mapping[str, Any], input: Any, output: Any) -> None:
    output.copy_(torch.softmax(input.float(), dim=variant["dim"]))


def _rotary_position_embedding(
    variant: Mapping[str, Any], input: Any, sin: Any, cos: Any, output: Any
) -> None:
    sin, cos = sin.float()[None, :, None, :], cos.float()[None, :, None, :]
    x = input.float()
    if variant["interleaved"]:  # pairs (x[2i], x[2i + 1])
        first, second = x[..., 0::2], x[..., 1::2]
    else:  # pairs (x[i], x[i + D / 2])
        first, second = x.chunk(2, dim=-1)
    rotated = (first * cos - second * sin, first * sin + second * cos)
    if variant["interleaved"]:
        output.copy_(torch.stack(rotated, dim=-1).flatten(-2))
    else:
        output.copy_(torch.cat(rotated, dim=-1))


COMPOSITES: dict[str, Composite] = {
    "add": _add,
    "fused_add_rms_norm": _fused_add_rms_norm,
    "rms_norm": _rms_norm,
    "rotary_position_embedding": _rotary_position_embedding,
    "silu": _silu,
    "softmax": _softmax,
    "swiglu": _swiglu,
}
"""Library kernel module -> its computation in PyTorch's ops."""


def enabled() -> bool:
    """Whether compiled calls may trace library kernels as PyTorch ops (:data:`KNOB`)."""
    return switched_on(KNOB)


def composite(kernel: GeneratedKernel) -> Callable[..., None] | None:
    """``kernel``'s work in PyTorch's ops, called with its arguments in parameter
    order; None where it has none or fusion is off (see the module docstring)."""
    if not enabled():
        return None
    found = origin(kernel.source_path)
    if found is None:
        return None
    module, variant = found
    function = COMPOSITES.get(module)
    if function is None:
        return None

    def run(*args: Any) -> None:
        function(variant, *args)

    return run
