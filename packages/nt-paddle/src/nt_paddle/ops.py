"""NineToothed's kernel library as PaddlePaddle functions: ``nt_paddle.ops.mm(a, b)``.

The ops of :mod:`ninetoothed.library` (the same names as ``nt_torch.ops``),
allocating their outputs with ``paddle.empty`` on the inputs' place; each
op's docstring gives its signature and what it supports.  Those with a
backward (as in ``nt_torch.ops``) run as a ``paddle.autograd.PyLayer`` on
tensors with ``stop_gradient=False``.
"""

from __future__ import annotations

from ninetoothed.library.ops import install
from nt_paddle._framework import PaddleFramework

framework = PaddleFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)
