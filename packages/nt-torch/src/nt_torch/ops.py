"""NineToothed's kernel library as PyTorch functions: ``nt_torch.ops.mm(a, b)``.

Each op allocates its output like its torch counterpart and runs a kernel of
:mod:`ninetoothed.library` (made on the first call of each variant, tuned on
the GPU): ``add``, ``addmm``, ``bmm``, ``conv2d``, ``fused_add_rms_norm``,
``max_pool2d``, ``mm``, ``rms_norm``, ``rotary_position_embedding``,
``scaled_dot_product_attention``, ``silu``, ``softmax``, ``swiglu``.  Each
op's docstring gives its signature and what it supports; the same ops exist
in ``nt_paddle.ops`` and ``nt_jax.ops``.  ``add``, ``addmm``, ``bmm``, ``mm``,
``rms_norm``, ``rotary_position_embedding``, ``scaled_dot_product_attention``,
``silu`` and ``softmax`` have backwards: on tensors requiring grad they are
recorded for autograd (``loss.backward()`` flows through them); the others
refuse such tensors with a clear error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ninetoothed.library.ops import InPlace, install, kernels
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_torch import autograd
from nt_torch.adapter import TorchAdapter

# Under torch.compile the ops' kernel lookup (and making a new variant) runs untraced.
torch.compiler.assume_constant_result(kernels.variant_name)  # type: ignore[no-untyped-call]


class TorchFramework(InPlace):
    """The library's hook for PyTorch: kernels write into outputs made by ``torch.empty``."""

    name = "torch"

    def __init__(self) -> None:
        self._adapter = TorchAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of a ``torch.Tensor``."""
        return self._adapter.describe(tensor)

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """``torch.empty`` with ``like``'s dtype (or ``dtype``) and device."""
        kind = getattr(torch, dtype) if dtype else like.dtype
        return torch.empty(tuple(shape), dtype=kind, device=like.device)

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``tensor.reshape(shape)`` (a view of a contiguous tensor)."""
        return tensor.reshape(tuple(shape))

    needs_grad = staticmethod(autograd.needs_grad)


framework = TorchFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)


def __getattr__(name: str) -> Callable[..., Any]:
    """For type checkers: the ops are installed at import (see ``__all__``)."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
