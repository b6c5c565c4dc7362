"""NineToothed for PaddlePaddle: run NineToothed kernels on ``paddle.Tensor`` arguments.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` (re-exported here as :func:`make` and :func:`jit`) run on
``paddle.Tensor`` arguments: its adapter (:mod:`nt_paddle.adapter`) reads
their shapes, strides, dtypes, places and Paddle's current CUDA stream, and
launches the generated kernel, writing into the tensors passed in.  It is
found through the ``ninetoothed`` entry-point group (see
:mod:`nt_paddle.plugin`).  Kernels dispatch on their arguments' type at call
time, so the same kernel also runs on other frameworks' tensors.

The kernel library's ops are :mod:`nt_paddle.ops` (``nt_paddle.ops.mm(a, b)``),
imported on first access.

Importing this package imports neither Paddle nor Triton.
"""

from typing import TYPE_CHECKING

from ninetoothed import jit, make
from ninetoothed.runtime.plugins import lazy_submodules

if TYPE_CHECKING:
    from nt_paddle import ops

__getattr__ = lazy_submodules(__name__, ("ops",))
"""``nt_paddle.ops`` (the kernel library's ops) is imported on first access."""

__version__ = "0.1.0"

__all__ = ["__version__", "jit", "make", "ops"]
