"""NineToothed for JAX: NineToothed kernels as functions of JAX arrays.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` (re-exported here as :func:`make` and :func:`jit`) run on
``jax.Array`` arguments.  JAX arrays are immutable, so a kernel is called with
one argument per parameter, outputs included (as arrays, or as
``jax.ShapeDtypeStruct`` for outputs the kernel only writes), and returns the
new arrays of the parameters it writes; calls work under ``jax.jit``.  See
:mod:`nt_jax.adapter` for how kernels are launched (Triton's interpreter on the
CPU, jax-triton on the GPU).  The adapter is found through the ``ninetoothed``
entry-point group (see :mod:`nt_jax.plugin`).

The kernel library's ops are :mod:`nt_jax.ops` (``nt_jax.ops.mm(a, b)``),
imported on first access.

Importing this package does not import JAX; the adapter does, on first use.
"""

from typing import TYPE_CHECKING

from ninetoothed import jit, make
from ninetoothed.runtime.plugins import lazy_submodules

if TYPE_CHECKING:
    from nt_jax import ops

__getattr__ = lazy_submodules(__name__, ("ops",))
"""``nt_jax.ops`` (the kernel library's ops) is imported on first access."""

__version__ = "0.1.0"

__all__ = ["__version__", "jit", "make", "ops"]
