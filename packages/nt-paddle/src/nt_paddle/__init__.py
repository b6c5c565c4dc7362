"""NineToothed for PaddlePaddle: run NineToothed kernels on ``paddle.Tensor`` arguments.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` run on ``paddle.Tensor`` arguments: its adapter
(:mod:`nt_paddle.adapter`) reads their shapes, strides, dtypes, places and
Paddle's current CUDA stream, and launches the generated kernel, writing into
the tensors passed in.  It is found through the ``ninetoothed`` entry-point
group (see :mod:`nt_paddle.plugin`).

:func:`make` and :func:`jit` are ``ninetoothed.make`` and ``ninetoothed.jit``,
for Paddle code that wants to say ``nt_paddle.make(...)``; kernels dispatch on
their arguments' type at call time, so the same kernel also runs on other
frameworks' tensors.  Importing this package imports neither Paddle nor Triton.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ninetoothed import Kernel, Tensor

__version__ = "0.1.0"

__all__ = ["jit", "make"]


def make(
    arrangement: Callable[..., Any],
    application: Callable[..., Any],
    tensors: Sequence[Tensor],
    **options: Any,
) -> Kernel:
    """Build a kernel, exactly as :func:`ninetoothed.make` (``name``, ``backend``, options)."""
    import ninetoothed

    return ninetoothed.make(arrangement, application, tensors, **options)


def jit(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Build a kernel from an annotated function, exactly as :func:`ninetoothed.jit`."""
    import ninetoothed

    return ninetoothed.jit(func, **options)
