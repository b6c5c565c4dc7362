"""The kernel library's hook for PaddlePaddle (:class:`ninetoothed.library.ops.Framework`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import paddle

from ninetoothed.library.ops import InPlace
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_paddle import autograd
from nt_paddle.adapter import PaddleAdapter

__all__ = ["PaddleFramework"]


class PaddleFramework(InPlace):
    """The library's hook for Paddle: kernels write into outputs made by ``paddle.empty``."""

    name = "paddle"

    def __init__(self) -> None:
        self._adapter = PaddleAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of a ``paddle.Tensor``."""
        return self._adapter.describe(tensor)

    @staticmethod
    def float32_products() -> str:
        """``"tf32"`` where Paddle lets cuBLAS round float32 products to TF32, else
        ``"ieee"``: its ``FLAGS_cublas_allow_tf32`` (off by default since 3.3), or on
        older versions its cuBLAS switch (on by default) unless
        ``NVIDIA_TF32_OVERRIDE=0``."""
        try:
            allowed = bool(paddle.get_flags(["FLAGS_cublas_allow_tf32"])["FLAGS_cublas_allow_tf32"])
        except (ValueError, KeyError):  # no such flag: an older Paddle, or a CPU build
            switch = getattr(paddle.base.core, "get_cublas_switch", None)
            allowed = bool(switch()) if switch is not None else True
            allowed = allowed and os.environ.get("NVIDIA_TF32_OVERRIDE") != "0"
        return "tf32" if allowed else "ieee"

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """``paddle.empty`` with ``like``'s dtype (or ``dtype``), on its place."""
        return paddle.empty(list(shape), dtype=dtype or like.dtype, device=like.place)

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``paddle.reshape`` (it shares a contiguous tensor's memory)."""
        return paddle.reshape(tensor, list(shape))

    needs_grad = staticmethod(autograd.needs_grad)

    @staticmethod
    def tracing() -> bool:
        """Static graph mode (``paddle.jit.to_static``): the ops' memo stands aside."""
        return not paddle.in_dynamic_mode()

    keyed_values = (type(paddle.float16),)
    """Arguments the ops' memo keys by value besides plain scalars (``out_dtype``)."""

    def signature(self, value: Any) -> Any:
        """What the ops' decisions read of a tensor (its type and description but the
        pointer), as one hashable value; None for anything else."""
        if isinstance(value, paddle.Tensor):
            return (type(value), *self._adapter.describe(value)[:4])
        return None
