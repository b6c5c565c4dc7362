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

Importing this package does not import JAX; the adapter does, on first use.
"""

from ninetoothed import jit, make

__version__ = "0.1.0"

__all__ = ["__version__", "jit", "make"]
