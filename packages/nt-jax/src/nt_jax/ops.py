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

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ninetoothed.library.ops import install
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_jax import autodiff
from nt_jax.adapter import JaxAdapter


class JaxFramework:
    """The library's hook for JAX: outputs are shapes and dtypes, kernels return them."""

    name = "jax"

    def __init__(self) -> None:
        self._adapter = JaxAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of a ``jax.Array`` (or a tracer of one)."""
        return self._adapter.describe(tensor)

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """A ``jax.ShapeDtypeStruct`` of ``shape`` and ``like``'s dtype (or ``dtype``)."""
        kind = jnp.dtype(dtype) if dtype else like.dtype
        return jax.ShapeDtypeStruct(tuple(shape), kind)  # type: ignore[no-untyped-call]

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``tensor.reshape(shape)``."""
        return tensor.reshape(tuple(shape))

    needs_grad = staticmethod(autodiff.needs_grad)

    def run(self, kernel: Any, arguments: Sequence[Any], outputs: Sequence[int]) -> list[Any]:
        """Call ``kernel``; it returns the new arrays of its outputs, in parameter order."""
        result = kernel(*arguments)
        returned = list(result) if isinstance(result, tuple) else [result]
        order = sorted(outputs)
        return [returned[order.index(index)] for index in outputs]


framework = JaxFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)


def __getattr__(name: str) -> Callable[..., Any]:
    """For type checkers: the ops are installed at import (see ``__all__``)."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
