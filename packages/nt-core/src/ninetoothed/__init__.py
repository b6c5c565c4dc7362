"""NineToothed: tile-oriented GPU kernels by arrangement and application.

The public surface is small and re-exported here: :class:`Symbol`,
:class:`Tensor`, :func:`block_size`, :func:`make`, :func:`jit` and
``ninetoothed.language`` (``ntl``).  Everything symbolic works with no plugin
installed; generating and running kernels needs ``nt-triton`` and a framework
adapter (``nt-torch``, ``nt-paddle`` or ``nt-jax``).
"""

from ninetoothed import language
from ninetoothed.evaluate import evaluate
from ninetoothed.make import Kernel, jit, make
from ninetoothed.symbol import Symbol, block_size
from ninetoothed.tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "Kernel",
    "Symbol",
    "Tensor",
    "block_size",
    "evaluate",
    "jit",
    "language",
    "make",
]
