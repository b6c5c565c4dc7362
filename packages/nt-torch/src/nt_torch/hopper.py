"""Where the library's attention forward runs the Gluon kernel for Hopper GPUs.

The library's ``scaled_dot_product_attention`` runs its NineToothed kernel
through :meth:`TorchFramework.run` (a first call) or the launch a memo's plan
pinned (:meth:`TorchFramework.launch_of`).  On an H100 or H200, for heads of
128 in float16 or bfloat16, :mod:`nt_triton.hopper_attention` (FlashAttention-3's
design in Gluon) is faster: 0.95-1.05 of cuDNN's kernel, where the generated
kernel reaches 0.73-0.83 (``docs/design.md``).  :func:`substitute` wraps that
kernel's launch so that each call it fits takes the Gluon kernel, and every
other call the kernel as before.  Which kernel a launch belongs to comes from
the library's record of what it made (``ops.kernels.origin``), as for
``nt_torch.fusion``.  Traced calls, autograd's forward (the variant that keeps
the log-sum-exp) and ``NINETOOTHED_HOPPER_ATTENTION=off`` keep the kernel.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["WORK_FLOOR", "fits", "on_hopper", "substitute"]

_DTYPES = (torch.float16, torch.bfloat16)

WORK_FLOOR = 2**34
"""The least ``batch x heads x queries x keys x 128`` the Gluon kernel takes: the smallest
shape it was measured faster at on an H100, (4, 32, 1024, 1024, 128).  Below it the
generated kernel keeps the call: Triton's launch of a kernel with tensor descriptors
costs tens of microseconds on the host, more than a short attention takes on the GPU,
where the generated kernel's launch costs a few."""


def substitute(kernel: Any, launch: Callable[..., Any]) -> Callable[..., Any]:
    """``launch`` (the kernel's launch) where ``kernel`` is not the library's attention
    forward at heads of 128, or the Gluon kernel cannot run here; else a launch of
    the same arguments ``(query, key, value, scale, causal, output)`` that takes
    the Gluon kernel for each call it :func:`fits` with a positive, finite scale,
    and ``launch`` for the others."""
    if not _attention_forward(getattr(kernel, "source_path", None)):
        return launch
    from nt_triton import hopper_attention, knobs

    if not (knobs.hopper_attention() and hopper_attention.available()):
        return launch
    run = hopper_attention.launch

    def attention(query: Any, key: Any, value: Any, scale: Any, causal: Any, output: Any) -> Any:
        # The kernel takes row maxima of the raw scores: right for a positive scale only.
        if 0 < scale < math.inf and fits(query, key, value, output):
            index = query.device.index
            if index is not None and torch._C._cuda_getDevice() != index:  # Triton launches
                # on the current device: make the tensors' device current, as the adapter does
                with torch.cuda.device(index):
                    return run(query, key, value, output, float(scale), bool(causal))
            return run(query, key, value, output, float(scale), bool(causal))
        return launch(query, key, value, scale, causal, output)

    return attention


def _attention_forward(source_path: str | None) -> bool:
    """Whether the kernel generated at ``source_path`` is the library's attention
    forward at heads of 128, without the log-sum-exp and not for a few queries."""
    if source_path is None:
        return False
    from ninetoothed.library.ops.kernels import origin

    found = origin(source_path)
    if found is None or found[0] != "scaled_dot_product_attention":
        return False
    variant = found[1]
    return bool(
        variant.get("head_bound") == 128
        and not variant.get("lse")
        and not variant.get("few_queries")
    )


def fits(query: Any, key: Any, value: Any, output: Any) -> bool:
    """Whether the Gluon kernel computes this call: tensors on a Hopper GPU (compute
    capability 9.0), float16 or bfloat16 alike, heads of exactly 128, non-empty,
    each with a contiguous last dimension, 16-byte aligned addresses and strides
    (what TMA copies need) and a contiguous output."""
    tensors = (query, key, value, output)
    if not all(type(t) is torch.Tensor for t in tensors):  # subclasses (fakes, wrappers): no
        return False
    dtype = query.dtype
    if dtype not in _DTYPES or any(t.dtype != dtype for t in tensors):
        return False
    if not on_hopper(query) or any(t.device != query.device for t in tensors):
        return False
    batch, heads, l_q, head = query.shape
    if head != 128 or key.shape[3] != 128 or l_q == 0 or key.shape[2] == 0:
        return False
    if batch * heads * l_q * key.shape[2] * head < WORK_FLOOR:
        return False
    if batch * heads == 0 or not output.is_contiguous():
        return False
    for t in (query, key, value):
        strides = t.stride()
        if strides[3] != 1 or t.data_ptr() % 16 or any(s % 8 for s in strides[:3]):
            return False  # 8 elements of 2 bytes: 16-byte strides
    return bool(output.data_ptr() % 16 == 0)


def on_hopper(tensor: Any) -> bool:
    """Whether ``tensor`` lies on a Hopper GPU."""
    return bool(tensor.device.type == "cuda" and _hopper(tensor.device.index))


@functools.cache
def _hopper(index: int | None) -> bool:
    """Whether CUDA device ``index`` (None: the current one) is a Hopper GPU."""
    return bool(torch.cuda.get_device_capability(index) == (9, 0))
