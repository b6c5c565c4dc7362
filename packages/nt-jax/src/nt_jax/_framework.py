"""The kernel library's hook for JAX (:class:`ninetoothed.library.ops.Framework`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ninetoothed.runtime.hookspecs import TensorInfo
from nt_jax import autodiff
from nt_jax.adapter import JaxAdapter

__all__ = ["JaxFramework"]


class JaxFramework:
    """The library's hook for JAX: outputs are shapes and dtypes, kernels return them."""

    name = "jax"

    def __init__(self) -> None:
        self._adapter = JaxAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of a ``jax.Array`` (or a tracer of one)."""
        return self._adapter.describe(tensor)

    @staticmethod
    def float32_products() -> str:
        """``"tf32"`` under JAX's default matmul precision (TF32 on recent GPUs) and the
        TF32 or bfloat16 levels; ``"tf32x3"`` for the multi-pass algorithms;
        ``"ieee"`` for float32 (``jax.default_matmul_precision("float32")``,
        ``"highest"``, ``"F32_F32_F32"``)."""
        value = getattr(jax.config, "jax_default_matmul_precision", None)
        if value is None:
            return "tf32"
        name = str(getattr(value, "name", value)).lower()
        if "tensorfloat32" in name or "tf32" in name or "bf16" in name or "bfloat16" in name:
            return "tf32x3" if name.endswith(("_x3", "_x6", "_x9")) else "tf32"
        if name in ("float32", "highest", "f32_f32_f32", "precision.highest"):
            return "ieee"
        return "tf32"

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """A ``jax.ShapeDtypeStruct`` of ``shape`` and ``like``'s dtype (or ``dtype``)."""
        kind = jnp.dtype(dtype) if dtype else like.dtype
        return jax.ShapeDtypeStruct(tuple(shape), kind)  # type: ignore[no-untyped-call]

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``tensor.reshape(shape)``."""
        return tensor.reshape(tuple(shape))

    needs_grad = staticmethod(autodiff.needs_grad)

    keyed_values = (type(jnp.float16),)
    """Arguments the ops' memo keys by value besides plain scalars (``out_dtype`` given
    as ``jnp.float16``: a class)."""

    def signature(self, value: Any) -> Any:
        """What the ops' decisions read of a concrete array (its type and description
        but the pointer), as one hashable value; None for a tracer or anything else,
        whose calls take the ops' full path."""
        if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
            return (type(value), *self._adapter.describe(value)[:4])
        return None

    def run(self, kernel: Any, arguments: Sequence[Any], outputs: Sequence[int]) -> list[Any]:
        """Call ``kernel``; it returns the new arrays of its outputs, in parameter order."""
        result = kernel(*arguments)
        returned = list(result) if isinstance(result, tuple) else [result]
        order = sorted(outputs)
        return [returned[order.index(index)] for index in outputs]
