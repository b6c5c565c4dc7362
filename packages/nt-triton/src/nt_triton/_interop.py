"""Interop with Triton's interpreter, which takes torch tensors only.

Under ``TRITON_INTERPRET=1`` Triton calls ``untyped_storage()``,
``new_empty``, ``set_`` and ``copy_`` on every tensor argument, which only
torch tensors have.  Adapters of other frameworks hand their tensors over
through this module:

* :func:`dlpack_views`: zero-copy torch views of a framework's tensors
  (DLPack), with a staged contiguous copy where DLPack gives no shared view;
* :func:`from_numpy`, :func:`empty_tensor`, :func:`to_numpy`, :func:`from_buffer`:
  numpy arrays and DLPack buffers (what JAX callbacks see) to torch and back.

PyTorch is needed on this path only; :func:`torch_module` says which extra
installs it when it is missing (``nt-paddle[interpreter]``,
``nt-jax[interpreter]``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.hookspecs import TensorInfo

__all__ = [
    "InterpreterArguments",
    "Staged",
    "dlpack_views",
    "empty_tensor",
    "from_buffer",
    "from_numpy",
    "to_numpy",
    "torch_module",
]


def torch_module(distribution: str, purpose: str) -> ModuleType:
    """PyTorch, or a :class:`LaunchError` naming ``distribution``'s extra that installs it.

    ``purpose`` says what needs it ("running kernels on paddle tensors under
    Triton's interpreter (TRITON_INTERPRET=1)").
    """
    try:
        import torch
    except ImportError as error:
        raise LaunchError(
            f"{purpose} needs PyTorch (Triton takes torch tensors there): "
            f'pip install "{distribution}[interpreter]"'
        ) from error
    return torch


@dataclass(frozen=True)
class Staged:
    """A tensor handed to the interpreter as a copy: write it back after the launch."""

    original: Any
    """The caller's tensor."""

    converted: Any
    """The torch copy the kernel ran on."""

    parameter: str


@dataclass(frozen=True)
class InterpreterArguments:
    """Tensors ready for Triton's interpreter."""

    tensors: list[TensorInfo]
    """The tensors' descriptions (a staged copy's strides and pointer are its own)."""

    arguments: list[Any]
    """Torch tensors, one per tensor parameter."""

    staged: list[Staged]
    """The tensors that went through a copy."""


def dlpack_views(
    torch: ModuleType,
    names: Sequence[str],
    tensors: Sequence[TensorInfo],
    arguments: Sequence[Any],
    *,
    clone: Callable[[Any], Any],
    kernel_name: str,
    framework: str,
) -> InterpreterArguments:
    """Torch tensors sharing each argument's memory, through DLPack.

    Should DLPack fail, or hand back a copy (as older Paddle releases did for
    non-contiguous tensors), that tensor goes through a contiguous temporary
    instead: ``clone(tensor)`` makes one the framework can export, and the
    caller copies it back into the original after the launch if the kernel
    writes it (:attr:`InterpreterArguments.staged`).
    """
    launch_args: list[Any] = []
    infos: list[TensorInfo] = []
    staged: list[Staged] = []
    for name, info, tensor in zip(names, tensors, arguments):
        shared = _shared_view(torch, tensor, info)
        if shared is not None:
            launch_args.append(shared)
            infos.append(info)
            continue
        try:
            converted = torch.from_dlpack(clone(tensor))
        except Exception as error:
            raise LaunchError(
                f"{kernel_name}: parameter {name!r} (a {framework} tensor of dtype {info.dtype} "
                f"on {info.device}) cannot be handed to Triton's interpreter through DLPack: "
                f"{error}"
            ) from error
        launch_args.append(converted)
        infos.append(
            info._replace(strides=tuple(converted.stride()), data_ptr=converted.data_ptr())
        )
        staged.append(Staged(tensor, converted, name))
    return InterpreterArguments(infos, launch_args, staged)


def _shared_view(torch: ModuleType, tensor: Any, info: TensorInfo) -> Any:
    """A torch tensor sharing ``tensor``'s memory and layout; ``None`` if DLPack gives none."""
    try:
        converted = torch.from_dlpack(tensor)
    except Exception:  # e.g. a dtype or layout the exchange does not carry
        return None
    if converted.numel() == 0:
        return converted
    # Zero-copy means the same first element and the same strides (a stride
    # of a dimension of size 1 never matters, and exporters may normalise it).
    strides_agree = all(
        size == 1 or mine == theirs
        for size, mine, theirs in zip(info.shape, info.strides, converted.stride())
    )
    if converted.data_ptr() != info.data_ptr or not strides_agree:
        return None
    return converted


_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}
"""The dtypes of ml_dtypes (JAX's numpy arrays) that torch has but cannot take from
numpy, by name, and the unsigned integers of their width."""


def from_numpy(torch: ModuleType, array: np.ndarray, *, copy: bool) -> Any:
    """A torch tensor with ``array``'s values (viewing it unless ``copy``)."""
    array = np.asarray(array)
    bits = _BITS.get(array.dtype.name)
    if bits is not None:  # numpy has no such dtype (ml_dtypes' arrays): torch reads the bits
        viewed = from_numpy(torch, array.view(bits), copy=copy)
        return viewed.view(getattr(torch, array.dtype.name))
    if copy:
        return torch.from_numpy(np.array(array, copy=True, order="C"))
    array = np.ascontiguousarray(array)
    with warnings.catch_warnings():
        # Callbacks get read-only arrays; inputs are only read.
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)


def empty_tensor(torch: ModuleType, info: TensorInfo) -> Any:
    """An uninitialised CPU torch tensor of ``info``'s shape and dtype."""
    return torch.empty(info.shape, dtype=getattr(torch, info.dtype))


def to_numpy(torch: ModuleType, tensor: Any, bfloat16: Any) -> np.ndarray:
    """``tensor``'s values as numpy; bfloat16 as the numpy dtype ``bfloat16`` given."""
    if tensor.dtype == torch.bfloat16:
        result: np.ndarray = tensor.view(torch.uint16).numpy().view(bfloat16)
        return result
    values: np.ndarray = tensor.numpy()
    return values


def from_buffer(torch: ModuleType, buffer: Any) -> Any:
    """A torch tensor viewing a device buffer that speaks DLPack (zero-copy)."""
    return torch.from_dlpack(buffer)
