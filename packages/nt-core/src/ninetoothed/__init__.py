"""NineToothed: tile-oriented GPU kernels by arrangement and application.

The public surface is small and re-exported here: :class:`Symbol`,
:class:`Tensor`, :func:`block_size`, :func:`make`, :func:`jit`,
``ninetoothed.language`` (``ntl``), and for inspecting arrangements
:func:`evaluate` plus upstream NineToothed's :func:`eval` and :func:`subs`.
``ninetoothed.debugging`` and ``ninetoothed.visualization`` are imported on
their own.  Everything symbolic works with no plugin installed; generating and
running kernels needs ``nt-triton`` and a framework adapter (``nt-torch``,
``nt-paddle`` or ``nt-jax``).
"""

from ninetoothed import language
from ninetoothed.eval import eval, subs
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
    "eval",
    "evaluate",
    "jit",
    "language",
    "make",
    "subs",
]
