"""The precision of float32 products: each op follows its framework's setting.

PyTorch computes float32 matrix products in float32 unless told otherwise
(``torch.backends.cuda.matmul.fp32_precision = "tf32"``, or
``torch.set_float32_matmul_precision("high")``); JAX rounds them to TF32 on
recent GPUs unless its default matmul precision asks for float32; Paddle
follows its cuBLAS switch.  Triton rounds float32 operands of ``tl.dot`` to
TF32 unless a call says otherwise.  So the ops whose kernels multiply
matrices (:func:`reads_products`) ask their framework's hook,
``float32_products()`` (``"tf32"`` or ``"ieee"``), and take a kernel made with
``make(..., input_precision=...)`` where float32 operands must not be rounded.
A framework without the hook keeps Triton's default.

The memo (:mod:`~ninetoothed.library.ops._memo`) keys these ops' calls on the
setting too (:class:`Live`): a setting changed between calls takes effect at
the next call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ninetoothed.library.ops.framework import Framework

__all__ = ["Live", "products", "reads_products", "setting", "variant"]

Function = TypeVar("Function", bound=Callable[..., Any])

TRITONS_DEFAULT = "tf32"
"""What ``tl.dot`` does with float32 operands when a call names no precision."""


def products(framework: Framework, dtype: str) -> dict[str, str]:
    """The kernel variant for operands of ``dtype`` under the framework's setting (see
    :func:`variant`); the hook is asked only for float32 operands."""
    return variant(setting(framework), dtype) if dtype == "float32" else {}


def variant(precision: str | None, dtype: str) -> dict[str, str]:
    """``make``'s ``{"input_precision": precision}`` for operands of ``dtype`` where they
    are float32 and ``precision`` is other than Triton's default, else nothing (other
    dtypes' products are the same either way): the ops' choice, and the ahead-of-time
    library build's (which has no framework to ask)."""
    if dtype != "float32" or precision in (None, TRITONS_DEFAULT):
        return {}
    return {"input_precision": precision}


def setting(framework: Framework) -> str | None:
    """The framework's float32 product precision now, None where it has no hook."""
    read = getattr(framework, "float32_products", None)
    value = None if read is None else read()
    return None if value is None else str(value)


def reads_products(function: Function) -> Function:
    """Mark an op whose choice of kernel reads :func:`products` (its memo keys on it)."""
    function.reads_float32_products = True  # type: ignore[attr-defined]
    return function


class Live:
    """A setting read afresh whenever a key is made: ``live[0]`` is the framework's
    float32 product precision at that moment (the memo reads its settings so)."""

    def __init__(self, framework: Framework) -> None:
        self._framework = framework

    def __getitem__(self, index: int) -> str | None:
        return setting(self._framework)
