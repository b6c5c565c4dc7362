"""NineToothed for PaddlePaddle: run NineToothed kernels on ``paddle.Tensor`` arguments.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` (re-exported here as :func:`make` and :func:`jit`) run on
``paddle.Tensor`` arguments: its adapter (:mod:`nt_paddle.adapter`) reads
their shapes, strides, dtypes, places and Paddle's current CUDA stream, and
launches the generated kernel, writing into the tensors passed in.  It is
found through the ``ninetoothed`` entry-point group (see
:mod:`nt_paddle.plugin`).  Kernels dispatch on their arguments' type at call
time, so the same kernel also runs on other frameworks' tensors.

Importing this package imports neither Paddle nor Triton.
"""

from ninetoothed import jit, make

__version__ = "0.1.0"

__all__ = ["__version__", "jit", "make"]
