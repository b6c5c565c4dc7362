"""The PyTorch framework adapter: describe ``torch.Tensor`` arguments and launch.

PyTorch tensors are mutable, so kernels write into the tensors passed in
(:class:`ninetoothed.runtime.adapter.Adapter`'s ``call``).  Triton takes torch
tensors as pointer arguments directly (on the GPU and in its interpreter),
and its launcher reads PyTorch's current stream itself; the adapter makes the
launch happen with the arguments' GPU current.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import torch

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.adapter import Adapter, cuda_index
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import (
    AutodiffBinding,
    FastPath,
    GeneratedKernel,
    HostReads,
    Miss,
    TensorInfo,
)
from nt_torch import autograd, inductor, jagged, launch_operator
from nt_torch._tensor_info import tensor_info
from nt_torch.autograd import refuse_grad
from nt_torch.tracing import traced


class TorchAdapter(Adapter):
    """Adapter for ``torch.Tensor`` (a ``FrameworkAdapter``)."""

    name = "torch"
    distribution = "nt-torch"
    tensor_types = (torch.Tensor, torch.nn.Parameter)  # Parameter: remembered by type too
    gpu_hint = "move them to CUDA"
    autodiff: ClassVar[AutodiffBinding | None] = autograd

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, strides (elements), dtype name, device and data pointer (0 while Dynamo
        traces or a ``torch.func`` transform wraps the call: a traced or batched tensor
        has no storage of its own, and the library's ops that describe it then never
        read the pointer; their launches go through the operators, which describe
        the real tensors)."""
        return tensor_info(obj, 0 if traced() else obj.data_ptr())

    def placeholder(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        """A zero-filled tensor handed to the kernel for a parameter the call leaves unused."""
        return torch.zeros(shape, dtype=getattr(torch, dtype), device=device)

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Refuse tensors requiring grad; while traced or vmapped, call the custom operator.

        Dynamo and ``torch.func`` cannot see into a launch, so there the call
        goes through the kernel's automatic custom operator
        (:func:`nt_torch.custom_ops.operator_for`), which launches eagerly
        through the template's call.  Eager calls pay these two checks only.
        """
        refuse_grad(kernel.spec.label, args)
        if self.tracing():
            if kernel.spec.jagged_parameters:
                raise LaunchError(
                    f"{kernel.spec.label}: kernels with jagged parameters run eagerly only, "
                    "not under torch.compile or torch.func transforms"
                )
            launch_operator.call(self, kernel, args, kwargs)
            return None
        return Adapter.call(self, kernel, args, kwargs)

    def bind_jagged(
        self,
        kernel: GeneratedKernel,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        describe: Callable[[Any], TensorInfo] | None = None,
    ) -> BoundCall:
        """Nested tensors (``layout=torch.jagged``) for jagged parameters (see :mod:`.jagged`)."""
        describe = describe or self.describe
        return jagged.bind(kernel.spec, args, kwargs, self.recognizes, describe)

    def tracing(self) -> bool:
        """Whether Dynamo traces or a ``torch.func`` transform wraps the current call."""
        return traced()

    def launch_eagerly(
        self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """The template's call, without the routing (what the custom operators run)."""
        Adapter.call(self, kernel, args, kwargs)

    def host_reads(self) -> HostReads:
        """PyTorch's reads (:mod:`nt_torch.fastpath`), made once per process: they ask
        CUDA how many devices there are."""
        if not _READS:
            from nt_torch import fastpath

            _READS.append(fastpath.host_reads())
        return _READS[0]

    def fast_path(self, kernel: GeneratedKernel, miss: Miss) -> FastPath | None:
        """The kernel's fast path with PyTorch's reads; none for jagged parameters (nested
        tensors are bound by :mod:`.jagged`, not read as plain tensors)."""
        if kernel.spec.jagged_parameters:
            return None
        return super().fast_path(kernel, miss)

    def aot_reads(self) -> tuple[Callable[[Any], Any], Callable[[Any], int]]:
        """What a C library's fast path reads of a tensor: the facts its checks depend on
        (shape, strides, dtype, device), and its data pointer."""
        return _aot_key, torch.Tensor.data_ptr

    def current_stream(self, device: str) -> int:
        """PyTorch's current stream on ``device`` (``torch.cuda.current_stream``), raw."""
        return int(torch._C._cuda_getCurrentRawStream(cuda_index(device)))

    def device_guard(self, device: str) -> AbstractContextManager[None] | None:
        """``torch.cuda.device`` of the tensors' GPU, when it is not the current one."""
        index = cuda_index(device)
        if torch.cuda.current_device() != index:
            guard: AbstractContextManager[None] = torch.cuda.device(index)
            return guard
        return None


def _aot_key(tensor: torch.Tensor) -> tuple[Any, ...]:
    return (tensor.shape, tensor.stride(), tensor.dtype, tensor.device)


_READS: list[HostReads] = []


inductor.use_adapter(TorchAdapter)  # Inductor's hand-over describes tensors with its own
