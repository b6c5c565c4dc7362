"""The PaddlePaddle framework adapter: describe ``paddle.Tensor`` arguments and launch.

Paddle tensors are mutable, so kernels write into the tensors passed in.

Triton takes Paddle tensors through two different doors:

* **On the GPU** Triton wants, for each pointer parameter, an object with a
  ``data_ptr()`` method and a ``dtype`` attribute; it reads
  ``str(arg.dtype).split(".")[-1]`` to type the pointer (``"float16"`` ->
  ``*fp16``).  :class:`PaddlePointer` is such an object, built from the
  tensor's own data pointer, so launching needs neither PyTorch nor a copy.
  Triton's launcher asks PyTorch (Triton <= 3.6) or the CUDA default stream
  (Triton >= 3.7) for the stream to launch on; neither is Paddle's current
  stream, so the adapter passes Paddle's current stream to the backend, and
  makes the tensors' GPU the CUDA current device for the launch.
* **Under Triton's interpreter** (``TRITON_INTERPRET=1``) only torch tensors are
  accepted, so each Paddle tensor is handed over as a torch tensor that shares
  its memory through DLPack (:func:`nt_triton.dlpack_views`): the
  kernel's writes land in the caller's Paddle tensors.  PyTorch is needed on
  this path only (``pip install "nt-paddle[interpreter]"``).

The call itself is :class:`ninetoothed.runtime.adapter.Adapter`'s; this module
supplies Paddle's hooks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import paddle

from ninetoothed.arrangement.dtype import name_of
from ninetoothed.errors import LaunchError
from ninetoothed.runtime import plugins
from ninetoothed.runtime.adapter import Adapter, cuda_index
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import AutodiffBinding, GeneratedKernel, HostReads, TensorInfo
from nt_paddle import autograd, static
from nt_paddle.autograd import refuse_grad
from nt_triton import dlpack_views, torch_module

__all__ = ["PaddleAdapter", "PaddlePointer"]


def _device_name(place: Any) -> str:
    """``"cpu"`` or ``"cuda:N"`` for a Paddle place; other accelerators by their own name."""
    if place.is_gpu_place():
        return f"cuda:{place.gpu_device_id()}"
    # Pinned host memory is host memory: kernels are not launched on it.
    if place.is_cpu_place() or place.is_cuda_pinned_place():
        return "cpu"
    if place.is_xpu_place():
        return f"xpu:{place.xpu_device_id()}"
    if place.is_custom_place():
        return f"{place.custom_device_type()}:{place.custom_device_id()}"
    return str(place)


class PaddlePointer:
    """What Triton receives for a Paddle tensor's pointer on the GPU.

    Triton turns any argument with ``data_ptr()`` and ``dtype`` into a pointer
    parameter, typed from ``str(dtype)`` (the part after the last ``.``), so a
    canonical name such as ``"bfloat16"`` is enough.  Holding the address (and
    not the tensor) keeps the object tiny; the caller keeps the tensor alive for
    the duration of the launch.
    """

    __slots__ = ("_data_ptr", "dtype")

    def __init__(self, data_ptr: int, dtype: str) -> None:
        self._data_ptr = data_ptr
        self.dtype = dtype
        """The canonical dtype name, e.g. ``"float16"``, as Triton reads it."""

    def data_ptr(self) -> int:
        """The device address of the tensor's first element."""
        return self._data_ptr

    def __repr__(self) -> str:
        return f"PaddlePointer({self._data_ptr:#x}, {self.dtype!r})"


class PaddleAdapter(Adapter):
    """Adapter for ``paddle.Tensor`` (a ``FrameworkAdapter``)."""

    name = "paddle"
    distribution = "nt-paddle"
    tensor_types = (paddle.Tensor,)
    gpu_hint = "move them to the GPU (tensor.cuda())"
    # Under to_static a warm kernel's call is its fast path: the call guard must come
    # first there too (nt_paddle.static), or SOT simulates the fast path's misses.
    guards_fast_path = True
    autodiff: ClassVar[AutodiffBinding | None] = autograd

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, strides (elements), dtype name, device and data pointer, from Paddle's API.

        Raises :class:`LaunchError` for sparse tensors, which have no strided
        layout for a kernel to address.
        """
        if not obj.is_dense():
            raise LaunchError(
                f"paddle tensor of shape {list(obj.shape)} is sparse; NineToothed kernels take "
                "dense tensors (call .to_dense() first)"
            )
        return TensorInfo(
            shape=tuple(obj.shape),
            # Paddle reports strides in elements, like TensorInfo.
            strides=tuple(obj.strides),
            dtype=name_of(obj.dtype),
            device=_device_name(obj.place),
            data_ptr=obj.data_ptr(),
        )

    def placeholder(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        """A zero-filled tensor handed to the kernel for a parameter the call leaves unused."""
        place = f"gpu:{cuda_index(device)}" if device.startswith("cuda") else device
        return paddle.zeros(shape, dtype=dtype).to(place)

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Refuse tensors taking part in autograd (no backward), then the template's call.

        Under ``paddle.jit.to_static`` or in a static program (see
        :mod:`nt_paddle.static`) the call raises a clear error.
        """
        static.refuse_static_graph(kernel.spec.label)
        refuse_grad(kernel.spec.label, args)
        return super().call(kernel, args, kwargs)

    def pointers(self, bound: BoundCall) -> list[Any]:
        """A :class:`PaddlePointer` per tensor: Triton needs no torch and no copy."""
        return [PaddlePointer(info.data_ptr, info.dtype) for info in bound.tensors]

    def launch_stream(self, device: str) -> int:
        """Paddle's current CUDA stream on ``device`` as a raw handle (0 on the CPU)."""
        if not device.startswith("cuda"):
            return 0
        stream = paddle.device.current_stream(f"gpu:{cuda_index(device)}")
        # The CUDA stream protocol: (version, cudaStream_t as an int).
        return int(stream.__cuda_stream__()[1])

    def host_reads(self) -> HostReads:
        """Paddle's reads (:mod:`nt_paddle.fastpath`), made once per process."""
        if not _READS:
            from nt_paddle import fastpath

            _READS.append(fastpath.host_reads(_cuda_device))
        return _READS[0]

    def device_guard(self, device: str) -> AbstractContextManager[None] | None:
        """Make the tensors' GPU the CUDA current device for the launch."""
        return _cuda_device(cuda_index(device))

    def launch_interpreted(self, kernel: GeneratedKernel, bound: BoundCall) -> None:
        """Launch through Triton's interpreter, on torch views of the Paddle tensors.

        Each tensor goes over zero-copy through DLPack, which Paddle 3.3 supports
        for every dense dtype and for strided views (transposes, stepped slices,
        offsets), keeping their strides.  A tensor DLPack cannot share goes
        through a contiguous temporary, copied back into the caller's tensor
        after the launch if the kernel writes it.
        """
        torch = torch_module(
            self.distribution,
            "running kernels on paddle tensors under Triton's interpreter (TRITON_INTERPRET=1; "
            "launching on the GPU does not)",
        )
        names = [parameter.name for parameter in kernel.spec.tensor_parameters]
        handed = dlpack_views(
            torch,
            names,
            bound.tensors,
            bound.tensor_arguments,
            # clone(), not contiguous(): Paddle's Tensor.contiguous() is in place
            # on a view (the view gets new storage and stops aliasing its base).
            clone=lambda tensor: tensor.clone(),
            kernel_name=kernel.spec.label,
            framework=self.name,
        )
        kernel.launch(kernel.prepare(handed.tensors, handed.arguments, bound.scalars), 0)
        for staged in handed.staged:
            if staged.parameter in kernel.outputs:
                # Reading the values back needs no sharing, so even a DLPack that
                # copies is right here. no_grad: copying into a leaf that requires
                # grad is otherwise refused, and the kernel's write is not traced.
                with paddle.no_grad():
                    staged.original.copy_(paddle.from_dlpack(staged.converted))


_READS: list[HostReads] = []

# Paddle is imported now: kernels made before it get nt-paddle's call guard.
plugins.refresh_call_guard()


@contextlib.contextmanager
def _cuda_device(index: int) -> Iterator[None]:
    """Make GPU ``index`` the CUDA current device for the launch, then restore it.

    Triton loads and launches the kernel on the CUDA current device (it reads
    it through PyTorch up to 3.6, which asks the CUDA runtime, or from the
    CUDA driver from 3.7).  Paddle's ``set_device`` records where Paddle puts
    new tensors and is not documented to change the CUDA runtime's device,
    which is what Triton reads, so that is set here directly, with Paddle's
    binding of ``cudaSetDevice`` (only when it differs: a call costs one
    ``cudaGetDevice`` on the usual path).
    """
    core = paddle.base.core
    previous = core.get_cuda_current_device_id()
    if previous == index:
        yield
        return
    core.set_cuda_current_device_id(index)
    try:
        yield
    finally:
        core.set_cuda_current_device_id(previous)
