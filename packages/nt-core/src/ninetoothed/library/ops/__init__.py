"""The library's ops, written once for every framework.

Each op checks its arguments, works out the output's shape, picks the kernel
variant (:mod:`~ninetoothed.library.ops.kernels`) and describes the
outputs to allocate; a framework's hook
(:class:`~ninetoothed.library.ops.framework.Framework`) does the
allocation and runs the kernel in its convention.  ``nt_torch.ops``,
``nt_paddle.ops`` and ``nt_jax.ops`` are these ops bound to their framework
by :func:`install`; those with a backward
(:mod:`~ninetoothed.library.ops.differentiation`) are recorded for the
framework's autodiff when their inputs need gradients.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, MutableMapping
from typing import Any

from ninetoothed.library.ops import attention, elementwise, matmul, pooling, rows, scaled
from ninetoothed.library.ops._memo import Memo
from ninetoothed.library.ops.differentiation import GRADIENTS, differentiated
from ninetoothed.library.ops.framework import Framework, InPlace
from ninetoothed.runtime import plugins

__all__ = ["GRADIENTS", "OPERATIONS", "Framework", "InPlace", "Memo", "bind", "install"]

OPERATIONS: dict[str, Callable[..., Any]] = {
    "add": elementwise.add,
    "addmm": matmul.addmm,
    "bmm": matmul.bmm,
    "conv2d": matmul.conv2d,
    "fused_add_rms_norm": rows.fused_add_rms_norm,
    "max_pool2d": pooling.max_pool2d,
    "mm": matmul.mm,
    "rms_norm": rows.rms_norm,
    "rotary_position_embedding": attention.rotary_position_embedding,
    "scaled_dot_product_attention": attention.scaled_dot_product_attention,
    "scaled_mm": scaled.scaled_mm,
    "silu": elementwise.silu,
    "softmax": rows.softmax,
    "swiglu": elementwise.swiglu,
}
"""Every op by name; each takes the framework first."""


def bind(operation: Callable[..., Any], framework: Framework, module: str) -> Callable[..., Any]:
    """``operation`` for one framework, as a function of ``module`` (the framework's ops
    module): its signature and documentation without the framework argument;
    differentiable when it has a backward (:data:`GRADIENTS`).  Calls that need no
    gradient remember their decisions per signature
    (:mod:`~ninetoothed.library.ops._memo`), the op's ``memo`` attribute."""
    memo = Memo(operation, framework)
    call = memo.__call__  # the bound method: no slot lookup per call
    op = differentiated(operation.__name__, operation, framework, call) or _plain(operation, call)
    signature = inspect.signature(operation)
    parameters = list(signature.parameters.values())[1:]
    op.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    op.__module__ = module
    op.memo = memo  # type: ignore[attr-defined]  # for a framework's own fast path
    return op


def _plain(
    operation: Callable[..., Any], memo: Callable[[tuple[Any, ...], dict[str, Any]], Any]
) -> Callable[..., Any]:
    @functools.wraps(operation)
    def op(*args: Any, **kwargs: Any) -> Any:
        plugins.call_guard()
        return memo(args, kwargs)

    return op


def install(namespace: MutableMapping[str, Any], framework: Framework) -> list[str]:
    """Put every op, bound to ``framework``, into a module's ``namespace``; return the names.

    The framework's ops module calls it with its ``globals()``: that module is where
    the ops say they live (``__module__``), so the core names no framework.  Loads
    the plugins (or asks them again) for their call guard
    (:data:`ninetoothed.runtime.plugins.call_guard`), which every op calls first: an
    op's first call may be one a tracer simulates.
    """
    plugins.plugin_manager()
    plugins.refresh_call_guard()
    module = namespace["__name__"]
    for name, operation in OPERATIONS.items():
        namespace[name] = bind(operation, framework, module)
    return sorted(OPERATIONS)
