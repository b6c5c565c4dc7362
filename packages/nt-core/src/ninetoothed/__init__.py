"""NineToothed: tile-oriented GPU kernels by arrangement and application.

The public surface is small and re-exported here: :class:`Symbol`,
:class:`Tensor`, :func:`block_size`, :func:`make`, :func:`jit`,
``ninetoothed.language`` (``ntl``), upstream NineToothed's dtype constants
(``ninetoothed.float16`` …, see :mod:`ninetoothed.arrangement.dtype`), and for inspecting
arrangements :func:`evaluate` plus upstream's :func:`eval` and :func:`subs`.
For the frameworks' autodiff and vmap: :func:`functional`,
:func:`differentiable` and :func:`batching` (:mod:`ninetoothed.runtime.autodiff`).
``ninetoothed.debugging`` and ``ninetoothed.visualization`` are imported on
their own.  Everything symbolic works with no plugin installed; generating and
running kernels needs ``nt-triton`` and a framework adapter (``nt-torch``,
``nt-paddle`` or ``nt-jax``).
"""

from ninetoothed import language
from ninetoothed.arrangement.dtype import (
    bfloat16,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ninetoothed.arrangement.reference import evaluate
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.compat.eval import eval, subs
from ninetoothed.runtime.autodiff import batching, differentiable, functional
from ninetoothed.runtime.make import Kernel, build, jit, make

__version__ = "0.1.0"

__all__ = [
    "Kernel",
    "Symbol",
    "Tensor",
    "batching",
    "bfloat16",
    "block_size",
    "build",
    "differentiable",
    "eval",
    "evaluate",
    "float16",
    "float32",
    "float64",
    "functional",
    "int8",
    "int16",
    "int32",
    "int64",
    "jit",
    "language",
    "make",
    "subs",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
