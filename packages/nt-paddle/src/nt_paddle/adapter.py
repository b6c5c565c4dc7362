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
  its memory through DLPack: the kernel's writes land in the caller's Paddle
  tensors.  PyTorch is needed on this path only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import paddle

from ninetoothed.binding import bind_call
from ninetoothed.dtype import name_of
from ninetoothed.errors import AdapterNotFoundError, LaunchError
from ninetoothed.hookspecs import GeneratedKernel, TensorInfo
from nt_triton import knobs

if TYPE_CHECKING:
    import torch

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


class PaddleAdapter:
    """Adapter for ``paddle.Tensor`` (a ``FrameworkAdapter``)."""

    name = "paddle"
    distribution = "nt-paddle"
    functional = False

    def recognizes(self, obj: object) -> bool:
        """Whether ``obj`` is a ``paddle.Tensor``."""
        return isinstance(obj, paddle.Tensor)

    def describe(self, obj: paddle.Tensor) -> TensorInfo:
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

    def current_stream(self, device: str) -> int:
        """Paddle's current CUDA stream on ``device`` as a raw handle (0 on the CPU)."""
        if not device.startswith("cuda"):
            return 0
        stream = paddle.device.current_stream(f"gpu:{_device_index(device)}")
        # The CUDA stream protocol: (version, cudaStream_t as an int).
        return int(stream.__cuda_stream__()[1])

    def call(self, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Validate and launch; results land in the tensors passed in."""
        spec = kernel.spec
        try:
            bound = bind_call(
                spec,
                args,
                kwargs,
                framework="paddle",
                recognizes=self.recognizes,
                describe=self.describe,
            )
        except LaunchError:
            # bind_call names a foreign tensor only by its class name, and
            # torch's and Paddle's are both "Tensor": say which frameworks are
            # mixed.  Done only on failure, so calls that bind pay nothing.
            _raise_if_mixed(spec.name, args)
            raise
        if knobs.interpreting():
            _launch_interpreted(kernel, bound.tensors, bound.tensor_arguments, bound.scalars)
            return
        device = bound.device
        if not device.startswith("cuda"):
            raise LaunchError(
                f"{spec.name}: the tensors are on {device}, but kernels run on a GPU; move them "
                "to the GPU (tensor.cuda()), or set TRITON_INTERPRET=1 to run through Triton's "
                "CPU interpreter"
            )
        pointers = [PaddlePointer(info.data_ptr, info.dtype) for info in bound.tensors]
        stream = self.current_stream(device)
        with _cuda_device(_device_index(device)):
            kernel.launch(kernel.prepare(bound.tensors, pointers, bound.scalars), stream)


def _device_index(device: str) -> int:
    """``1`` for ``"cuda:1"``."""
    return int(device.partition(":")[2] or 0)


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


def _raise_if_mixed(kernel_name: str, args: tuple[Any, ...]) -> None:
    """Raise a :class:`LaunchError` naming both frameworks if ``args`` has a foreign tensor."""
    from ninetoothed import plugins

    for position, argument in enumerate(args):
        if isinstance(argument, (bool, int, float, complex, str, bytes, type(None), paddle.Tensor)):
            continue
        try:
            adapter = plugins.adapter_for(argument)
        except AdapterNotFoundError:  # not any framework's tensor: bind_call's message stands
            continue
        if adapter.name != "paddle":
            cls = type(argument)
            raise LaunchError(
                f"{kernel_name}: cannot mix tensors of two frameworks in one kernel call: the "
                f"call has paddle tensors, but argument {position} is a {adapter.name} tensor "
                f"({cls.__module__}.{cls.__qualname__}); convert it to paddle (e.g. "
                "paddle.from_dlpack) or call the kernel with one framework's tensors"
            )


def _torch() -> Any:
    """PyTorch, which Triton's interpreter needs; a clear error when it is missing."""
    try:
        import torch
    except ImportError as error:
        raise LaunchError(
            "running kernels on paddle tensors under Triton's interpreter (TRITON_INTERPRET=1) "
            "needs PyTorch, because the interpreter only takes torch tensors: pip install torch "
            "(launching on the GPU does not need it)"
        ) from error
    return torch


def _launch_interpreted(
    kernel: GeneratedKernel,
    tensors: list[TensorInfo],
    arguments: list[paddle.Tensor],
    scalars: dict[str, Any],
) -> None:
    """Launch through Triton's interpreter, giving it torch views of the Paddle tensors.

    Each tensor goes over zero-copy through DLPack, which Paddle 3.3 supports
    for every dense dtype and for strided views (transposes, stepped slices,
    offsets), keeping their strides.  Should DLPack fail, or hand back a copy
    (as older Paddle releases did for non-contiguous tensors), that tensor
    goes through a contiguous temporary instead, which is copied back into the
    caller's tensor after the launch if the kernel writes it.
    """
    torch = _torch()
    launch_args: list[Any] = []
    infos: list[TensorInfo] = []
    staged: list[tuple[paddle.Tensor, torch.Tensor, str]] = []
    names = [parameter.name for parameter in kernel.spec.tensor_parameters]
    for name, info, tensor in zip(names, tensors, arguments):
        shared = _shared_torch_view(torch, tensor, info)
        if shared is not None:
            launch_args.append(shared)
            infos.append(info)
            continue
        # The copy: a contiguous temporary in torch's hands.  clone(), not
        # contiguous(): Paddle's Tensor.contiguous() is in place on a view (the
        # view gets new, contiguous storage and stops aliasing its base), so
        # it would cut the caller's tensor off from its buffer.
        try:
            converted = torch.from_dlpack(tensor.clone())
        except Exception as error:
            raise LaunchError(
                f"{kernel.spec.name}: parameter {name!r} (a paddle tensor of dtype {info.dtype} "
                f"on {info.device}) cannot be handed to Triton's interpreter through DLPack: "
                f"{error}"
            ) from error
        launch_args.append(converted)
        infos.append(
            info._replace(strides=tuple(converted.stride()), data_ptr=converted.data_ptr())
        )
        staged.append((tensor, converted, name))
    kernel.launch(kernel.prepare(infos, launch_args, scalars), 0)
    written = getattr(kernel, "outputs", None)
    for tensor, converted, name in staged:
        if written is None or name in written:
            # Reading the values back needs no sharing, so even a DLPack that
            # copies is right here. no_grad: copying into a leaf that requires
            # grad is otherwise refused, and the kernel's write is not traced.
            with paddle.no_grad():
                tensor.copy_(paddle.from_dlpack(converted))


def _shared_torch_view(torch: Any, tensor: paddle.Tensor, info: TensorInfo) -> torch.Tensor | None:
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
