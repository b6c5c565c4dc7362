"""NineToothed for PyTorch: run NineToothed kernels on ``torch.Tensor`` arguments.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` (re-exported here as :func:`make` and :func:`jit`) run on
``torch.Tensor`` arguments: its adapter (:mod:`nt_torch.adapter`) reads their
shapes, strides, dtypes and devices, and launches the generated kernel,
writing into the tensors passed in.  It is found through the ``ninetoothed``
entry-point group (see :mod:`nt_torch.plugin`).

Importing this package imports neither PyTorch nor Triton.
"""

from ninetoothed import jit, make

__version__ = "0.1.0"

__all__ = ["__version__", "jit", "make"]
