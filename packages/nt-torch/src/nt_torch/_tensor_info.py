"""What the PyTorch adapter and Inductor's hand-over both need to describe a
tensor: its shape, strides, dtype name and device name.

Its own module so that :mod:`nt_torch.inductor` (imported by the launch
operator, which the adapter imports) reads descriptions without importing the
adapter.
"""

from __future__ import annotations

from typing import Any

import torch

from ninetoothed.arrangement.dtype import name_of
from ninetoothed.runtime.hookspecs import TensorInfo

__all__ = ["device_name", "dtype_name", "signature", "tensor_info"]


def signature(value: Any) -> Any:
    """What the ops' decisions read of a tensor (type, shape, strides, dtype, device), as
    one hashable value; None for anything else."""
    if isinstance(value, torch.Tensor):
        return (type(value), value.shape, value.stride(), value.dtype, value.device)
    return None


def tensor_info(tensor: Any, data_ptr: int, remember: bool = True) -> TensorInfo:
    """``tensor``'s description with ``data_ptr`` as its pointer (traced tensors have none).

    ``remember=False`` names the device without the memo: a store into it while
    Inductor compiles would fail a guard Dynamo built on the memo's contents."""
    device = _device_name(tensor.device) if remember else device_name(tensor.device)
    return TensorInfo(
        tuple(tensor.shape), tensor.stride(), dtype_name(tensor.dtype), device, data_ptr
    )


_DTYPE_NAMES: dict[torch.dtype, str] = {
    dtype: name_of(dtype) for dtype in vars(torch).values() if isinstance(dtype, torch.dtype)
}
"""Every torch dtype's name, keyed by torch dtypes only: Dynamo (torch 2.11) traces a
lookup in this dict, but not one in the core's shared memo, where other
frameworks' dtypes (NumPy's, JAX's) may be keys it cannot hash."""


def dtype_name(dtype: torch.dtype) -> str:
    """``name_of(dtype)``, from :data:`_DTYPE_NAMES` for every dtype torch defines."""
    name = _DTYPE_NAMES.get(dtype)
    return name if name is not None else name_of(dtype)


_DEVICE_NAMES: dict[torch.device, str] = {}


def _device_name(device: torch.device) -> str:
    """``"cpu"`` or ``"cuda:N"`` (remembered: this runs on every call; a dict rather
    than ``functools.cache``, which Dynamo warns about when it traces a call)."""
    name = _DEVICE_NAMES.get(device)
    if name is None:
        name = _DEVICE_NAMES[device] = device_name(device)
    return name


def device_name(device: torch.device) -> str:
    """``"cpu"`` or ``"cuda:N"``."""
    return f"cuda:{device.index}" if device.type == "cuda" else str(device)
