"""The PyTorch framework adapter: describe ``torch.Tensor`` arguments and launch.

PyTorch tensors are mutable, so kernels write into the tensors passed in.
Triton takes torch tensors as pointer arguments directly (on the GPU and in
its interpreter), and its launcher reads PyTorch's current stream itself; the
adapter makes the launch happen on the arguments' device.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from ninetoothed.binding import bind_call
from ninetoothed.dtype import name_of
from ninetoothed.errors import LaunchError
from ninetoothed.hookspecs import GeneratedKernel, TensorInfo
from nt_triton import knobs


class TorchAdapter:
    """Adapter for ``torch.Tensor`` (a ``FrameworkAdapter``)."""

    name = "torch"
    distribution = "nt-torch"
    functional = False

    def recognizes(self, obj: object) -> bool:
        """Whether ``obj`` is a ``torch.Tensor``."""
        return isinstance(obj, torch.Tensor)

    def describe(self, obj: torch.Tensor) -> TensorInfo:
        """Shape, strides (elements), dtype name, device and data pointer."""
        return TensorInfo(
            tuple(obj.shape),
            obj.stride(),
            name_of(obj.dtype),
            _device_name(obj.device),
            obj.data_ptr(),
        )

    def current_stream(self, device: str) -> int:
        """PyTorch's current CUDA stream on ``device`` (0 on the CPU)."""
        if not device.startswith("cuda"):
            return 0
        return torch.cuda.current_stream(torch.device(device)).cuda_stream

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Validate and launch; results land in the tensors passed in."""
        bound = bind_call(
            kernel.spec,
            args,
            kwargs,
            framework="torch",
            recognizes=self.recognizes,
            describe=self.describe,
        )
        device = bound.device
        if knobs.interpreting():
            kernel.launch(kernel.prepare(bound.tensors, bound.tensor_arguments, bound.scalars), 0)
            return
        if not device.startswith("cuda"):
            raise LaunchError(
                f"{kernel.spec.name}: the tensors are on {device}, but kernels run on a GPU; move "
                "them to CUDA, or set TRITON_INTERPRET=1 to run through Triton's CPU interpreter"
            )
        index = int(device.split(":")[1])
        if torch.cuda.current_device() != index:
            with torch.cuda.device(index):
                kernel.launch(
                    kernel.prepare(bound.tensors, bound.tensor_arguments, bound.scalars), 0
                )
            return
        kernel.launch(kernel.prepare(bound.tensors, bound.tensor_arguments, bound.scalars), 0)


@functools.cache
def _device_name(device: torch.device) -> str:
    """``"cpu"`` or ``"cuda:N"`` (cached: this runs on every call)."""
    return f"cuda:{device.index}" if device.type == "cuda" else str(device)
