"""PaddlePaddle: in-place calls; outputs are the tensors passed in."""

from __future__ import annotations

from typing import Any

import numpy as np
import paddle

from support.base import FrameworkSupport


class PaddleSupport(FrameworkSupport):
    """Test helper for ``nt-paddle``."""

    name = "paddle"

    @property
    def place(self) -> Any:
        """Paddle's place for :attr:`device`: the first GPU, or the CPU."""
        return paddle.CUDAPlace(0) if self.device == "cuda" else paddle.CPUPlace()

    def from_numpy(self, array: np.ndarray) -> paddle.Tensor:
        if array.dtype.name in ("bfloat16", "float8_e4m3fn"):
            # Paddle does not take ml_dtypes' arrays: go through float32.
            kind = array.dtype.name
            return paddle.to_tensor(array.astype(np.float32), place=self.place).astype(kind)
        return paddle.to_tensor(np.ascontiguousarray(array), place=self.place)

    def to_numpy(self, value: paddle.Tensor) -> np.ndarray:
        if value.dtype == paddle.bfloat16:
            value = value.astype("float32")
        # .numpy() copies to the host and honours strided views.
        return value.numpy()

    def non_contiguous(self, array: np.ndarray) -> paddle.Tensor:
        # Paddle 3.x has strided views (FLAGS_use_stride_kernel, on by default):
        # transpose and stepped slices share memory and report is_contiguous() False.
        if array.ndim == 1:
            doubled = np.repeat(array, 2)
            return self.from_numpy(doubled)[::2]
        transposed = np.ascontiguousarray(np.swapaxes(array, -1, -2))
        axes = list(range(array.ndim))
        axes[-1], axes[-2] = axes[-2], axes[-1]
        return self.from_numpy(transposed).transpose(axes)

    def view(self, base: paddle.Tensor, shape, strides, offset=0) -> paddle.Tensor:
        # Paddle's offset counts bytes.
        return paddle.as_strided(base, list(shape), list(strides), offset * base.element_size())

    @property
    def ops(self):
        import nt_paddle.ops

        return nt_paddle.ops

    def poisoned_like(self, like: paddle.Tensor, shape, dtype=None) -> paddle.Tensor:
        return paddle.full(list(shape), float("nan"), dtype=dtype or like.dtype, device=like.place)
