"""NineToothed for PyTorch.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` run on ``torch.Tensor`` arguments: its adapter reads their
shapes, strides, dtypes, devices and the current CUDA stream, and launches the
generated kernel.  It is found through the ``ninetoothed`` entry-point group
(see :mod:`nt_torch.plugin`).
"""

__version__ = "0.1.0"
