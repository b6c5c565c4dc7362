"""NineToothed's kernel library as JAX functions: ``nt_jax.ops.mm(a, b)``.

The ops of :mod:`ninetoothed.library` (the same names as ``nt_torch.ops``),
functional like every JAX kernel: outputs are described by
``jax.ShapeDtypeStruct`` and returned by the kernel; they work under
``jax.jit``.  Each op's docstring gives its signature and what it supports
(JAX arrays are always row-major, so strides never come up).  Those with a
backward (as in ``nt_torch.ops``) are ``jax.custom_vjp`` functions whenever
their arguments are traced, so ``jax.grad`` flows through them.
"""

from __future__ import annotations

from ninetoothed.library.ops import install
from nt_jax._framework import JaxFramework

framework = JaxFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)
