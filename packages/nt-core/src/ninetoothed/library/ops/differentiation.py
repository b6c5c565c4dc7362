"""The library ops' gradients: each op with a backward is recorded for the framework's
autodiff when, and only when, a gradient may be asked of it.

:func:`differentiated` wraps an op bound to a framework: a call whose
arguments need no gradient (``Framework.needs_grad``: no tensor requiring grad
in PyTorch or Paddle, no traced array in JAX) runs the op as before, at the
cost of that check; otherwise the call goes through a
:func:`ninetoothed.differentiable` declaration of the op, with its arguments
made positional and its defaults filled in, so the backward sees every one.
The backward rules are :mod:`ninetoothed.library.gradients`' (framework operators),
the rotary embedding's (the op itself, rotating back) and attention's
(FlashAttention-2's kernels,
:mod:`~ninetoothed.library.scaled_dot_product_attention_backward`).  Ops
without a rule (``conv2d``, ``max_pool2d``, ``swiglu``,
``fused_add_rms_norm``) keep refusing inputs that require grad.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

from ninetoothed.library import gradients
from ninetoothed.library.ops import attention
from ninetoothed.library.ops.framework import Framework
from ninetoothed.runtime import plugins
from ninetoothed.runtime.autodiff import differentiable

__all__ = ["GRADIENTS", "Gradient", "Rule", "Tensors", "differentiated"]

Tensors = tuple[Any, ...]
Rule = Callable[[Framework, Tensors, Tensors, Tensors], Tensors]


class Gradient(NamedTuple):
    """How an op is differentiated."""

    backward: Rule
    """``backward(framework, inputs, outputs, grads)``: one gradient per input."""
    forward: Callable[..., Any] | None = None
    """The forward recorded instead of the op (same arguments), when it must also
    return ``residuals`` outputs for the backward."""
    residuals: int = 0


def _framework_free(rule: Callable[[Tensors, Tensors, Tensors], Tensors]) -> Rule:
    """A :mod:`ninetoothed.library.gradients` rule, which needs no framework hook."""

    def backward(framework: Framework, inputs: Tensors, outputs: Tensors, grads: Tensors) -> Any:
        return rule(inputs, outputs, grads)

    return backward


def _rope(framework: Framework, inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """The rotation's transpose is the rotation back: the op with ``-sin``."""
    x, sin, cos, interleaved = inputs
    (g,) = grads
    dx = attention.rotary_position_embedding(framework, g, -sin, cos, interleaved)
    if not (gradients.wants_grad(sin) or gradients.wants_grad(cos)):
        return dx, None, None, None
    # y0 = x0·cos - x1·sin, y1 = x0·sin + x1·cos for each pair (x0, x1).
    half = x.shape[-1] // 2
    if interleaved:
        x0, x1, g0, g1 = x[..., 0::2], x[..., 1::2], g[..., 0::2], g[..., 1::2]
    else:
        x0, x1, g0, g1 = x[..., :half], x[..., half:], g[..., :half], g[..., half:]
    dsin = (g1 * x0 - g0 * x1).sum((0, 2))
    dcos = (g0 * x0 + g1 * x1).sum((0, 2))
    return dx, dsin, dcos, None


def _sdpa(framework: Framework, inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    q, k, v, is_causal, scale, enable_gqa = inputs
    o, lse = outputs
    (do,) = grads
    dq, dk, dv = attention.scaled_dot_product_attention_backward(
        framework, q, k, v, o, lse, do, is_causal, scale
    )
    return dq, dk, dv, None, None, None


GRADIENTS: dict[str, Gradient] = {
    "add": Gradient(_framework_free(gradients.add)),
    "addmm": Gradient(_framework_free(gradients.addmm)),
    "bmm": Gradient(_framework_free(gradients.bmm)),
    "mm": Gradient(_framework_free(gradients.mm)),
    "rms_norm": Gradient(_framework_free(gradients.rms_norm)),
    "rotary_position_embedding": Gradient(_rope),
    "scaled_dot_product_attention": Gradient(
        _sdpa, attention.scaled_dot_product_attention_with_lse, residuals=1
    ),
    "silu": Gradient(_framework_free(gradients.silu)),
    "softmax": Gradient(_framework_free(gradients.softmax)),
}
"""The ops with a backward, by name."""


def differentiated(
    name: str,
    operation: Callable[..., Any],
    framework: Framework,
    plain: Callable[[tuple[Any, ...], dict[str, Any]], Any],
) -> Callable[..., Any] | None:
    """``operation`` bound to ``framework`` and recorded for autodiff when a gradient may
    be asked, otherwise ``plain(args, kwargs)``; None if the op has no backward (or the
    framework no autodiff hook)."""
    gradient = GRADIENTS.get(name)
    if gradient is None or not hasattr(framework, "needs_grad"):
        return None
    needs_grad = framework.needs_grad
    names = list(inspect.signature(operation).parameters)[1:]
    signature = inspect.signature(operation).replace(
        parameters=list(inspect.signature(operation).parameters.values())[1:]
    )
    recorded = gradient.forward or operation

    def forward(*values: Any) -> Any:
        return recorded(framework, **dict(zip(names, values)))

    forward.__name__ = name
    declared = differentiable(
        forward, functools.partial(gradient.backward, framework), residuals=gradient.residuals
    )

    @functools.wraps(operation)
    def op(*args: Any, **kwargs: Any) -> Any:
        plugins.call_guard()
        if needs_grad(args, kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return declared(*bound.arguments.values())
        return plain(args, kwargs)

    return op
