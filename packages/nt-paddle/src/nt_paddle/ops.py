"""NineToothed's kernel library as PaddlePaddle functions: ``nt_paddle.ops.mm(a, b)``.

The ops of :mod:`ninetoothed.library` (the same names as ``nt_torch.ops``),
allocating their outputs with ``paddle.empty`` on the inputs' place; each
op's docstring gives its signature and what it supports.  Those with a
backward (as in ``nt_torch.ops``) run as a ``paddle.autograd.PyLayer`` on
tensors with ``stop_gradient=False``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import paddle

from ninetoothed.library.ops import InPlace, install
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_paddle import autograd
from nt_paddle.adapter import PaddleAdapter


class PaddleFramework(InPlace):
    """The library's hook for Paddle: kernels write into outputs made by ``paddle.empty``."""

    name = "paddle"

    def __init__(self) -> None:
        self._adapter = PaddleAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of a ``paddle.Tensor``."""
        return self._adapter.describe(tensor)

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """``paddle.empty`` with ``like``'s dtype (or ``dtype``), on its place."""
        return paddle.empty(list(shape), dtype=dtype or like.dtype, device=like.place)

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``paddle.reshape`` (it shares a contiguous tensor's memory)."""
        return paddle.reshape(tensor, list(shape))

    needs_grad = staticmethod(autograd.needs_grad)


framework = PaddleFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)


def __getattr__(name: str) -> Callable[..., Any]:
    """For type checkers: the ops are installed at import (see ``__all__``)."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
