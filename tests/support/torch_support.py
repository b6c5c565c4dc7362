"""PyTorch: in-place calls; outputs are the tensors passed in."""

from __future__ import annotations

import numpy as np
import torch

from support.base import FrameworkSupport


class TorchSupport(FrameworkSupport):
    """Test helper for ``nt-torch``."""

    name = "torch"

    def from_numpy(self, array: np.ndarray) -> torch.Tensor:
        if array.dtype.name in ("bfloat16", "float8_e4m3fn"):  # ml_dtypes': via float32
            kind = getattr(torch, array.dtype.name)
            return torch.from_numpy(array.astype(np.float32)).to(self.device, kind)
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def to_numpy(self, value: torch.Tensor) -> np.ndarray:
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.detach().cpu().numpy()

    def non_contiguous(self, array: np.ndarray) -> torch.Tensor:
        if array.ndim == 1:
            doubled = np.repeat(array, 2)
            return self.from_numpy(doubled)[::2]
        transposed = np.ascontiguousarray(np.swapaxes(array, -1, -2))
        return self.from_numpy(transposed).transpose(-1, -2)

    def view(self, base: torch.Tensor, shape, strides, offset=0) -> torch.Tensor:
        return base.as_strided(tuple(shape), tuple(strides), offset)

    @property
    def ops(self):
        import nt_torch.ops

        return nt_torch.ops

    def poisoned_like(self, like: torch.Tensor, shape, dtype=None) -> torch.Tensor:
        kind = getattr(torch, dtype) if dtype else like.dtype
        return torch.full(tuple(shape), float("nan"), dtype=kind, device=like.device)
