"""Backward rules of the library's ops, written once for every framework.

Each rule has the shape :func:`ninetoothed.differentiable` wants,
``rule(inputs, outputs, grads) -> one gradient per input`` (None for
non-tensor inputs), and uses only what PyTorch, Paddle and JAX tensors share:
``+ - * / @ **``, ``.sum(axis)``, ``.reshape``, ``.mT``, slicing, plus
:func:`concat` (the one call that differs, taken from the framework binding).
The library's ops come with theirs attached
(:mod:`ninetoothed.library.ops.differentiation`): ``nt_torch.ops.mm(a, b)``
on a tensor requiring grad is recorded with :func:`mm`.  Pair a rule with any
other forward of the same convention yourself::

    mm = ninetoothed.differentiable(my_mm, gradients.mm)

Conventions (those of the frameworks' own ops and the library's): ``add(input,
other)``, ``mm(a, b)``, ``bmm(a, b)``, ``addmm(input, mat1, mat2, beta,
alpha)``, ``silu(x)``, ``softmax(x, dim=-1)``, ``rms_norm(x, weight, eps)``
over the last dimension (``weight`` may be None), and ``rope(x, sin, cos)``
rotating halves (``x·cos + rotate_half(x)·sin``, ``rotate_half([a, b]) = [-b,
a]``; the library's ``rotary_position_embedding`` has its own rule, the op
rotating back).  Broadcast inputs get their gradients summed back to their
own shapes.  Attention's backward is FlashAttention-2's kernels
(:mod:`ninetoothed.library.scaled_dot_product_attention_backward`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "add",
    "addmm",
    "bmm",
    "concat",
    "mm",
    "rms_norm",
    "rope",
    "silu",
    "softmax",
    "sum_to",
    "wants_grad",
]

Tensors = tuple[Any, ...]


def sum_to(gradient: Any, shape: Sequence[int]) -> Any:
    """``gradient`` summed over the dimensions broadcasting added to a ``shape`` input."""
    shape = tuple(shape)
    if tuple(gradient.shape) == shape:
        return gradient
    extra = len(gradient.shape) - len(shape)
    axes = list(range(extra)) + [
        extra + dim
        for dim, size in enumerate(shape)
        if size == 1 and gradient.shape[extra + dim] != 1
    ]
    return gradient.sum(tuple(axes)).reshape(shape) if axes else gradient


def wants_grad(tensor: Any) -> bool:
    """Whether ``tensor`` may want a gradient: False for a PyTorch tensor that does not
    require grad or a Paddle tensor that stops it; True otherwise (JAX drops what
    is not asked for).  A rule may skip work for inputs that want none."""
    requires = getattr(tensor, "requires_grad", None)
    if requires is not None:
        return bool(requires)
    stops = getattr(tensor, "stop_gradient", None)
    return not stops if stops is not None else True


def concat(tensors: Sequence[Any], axis: int) -> Any:
    """Join ``tensors`` along ``axis`` with their framework's own function."""
    from ninetoothed.runtime import autodiff

    return autodiff.binding_of(tensors[0]).concat(list(tensors), axis)


def add(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``add(input, other)``."""
    x, y = inputs[:2]
    (g,) = grads
    return (sum_to(g, x.shape), sum_to(g, y.shape), *([None] * (len(inputs) - 2)))


def mm(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``mm(a, b)``: ``(g·bᵀ, aᵀ·g)``."""
    a, b = inputs
    (g,) = grads
    return g @ b.mT, a.mT @ g


bmm = mm
"""``bmm(a, b)``: the same rule, batched (``.mT`` swaps the last two dimensions)."""


def addmm(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``addmm(input, mat1, mat2, beta=1, alpha=1) = beta·input + alpha·mat1·mat2``."""
    input, mat1, mat2 = inputs[:3]
    beta, alpha = (tuple(inputs[3:]) + (1, 1))[:2]
    (g,) = grads
    return (
        sum_to(g * beta, input.shape),
        (g @ mat2.mT) * alpha,
        (mat1.mT @ g) * alpha,
        *([None] * (len(inputs) - 3)),
    )


def silu(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``silu(x) = x·σ(x)``: ``g·σ(x)·(1 + x·(1 - σ(x)))``."""
    (x,) = inputs
    (g,) = grads
    sigmoid = 1 / (1 + math.e ** (-x))
    return (g * sigmoid * (1 + x * (1 - sigmoid)),)


def softmax(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``softmax(x, dim=-1)``: ``y·(g - Σ g·y)`` along ``dim``, from the output ``y``."""
    (y,) = outputs
    (g,) = grads
    dim = inputs[1] if len(inputs) > 1 else -1
    kept = list(y.shape)
    kept[dim] = 1
    return (y * (g - (g * y).sum(dim).reshape(kept)), *([None] * (len(inputs) - 1)))


def rms_norm(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``rms_norm(x, weight, eps) = x·r·weight`` with ``r = (mean(x²) + eps)^-½``
    (``weight`` None: ``x·r``, and no gradient for it)."""
    x, weight, eps = inputs
    (g,) = grads
    size = x.shape[-1]
    r = ((x * x).sum(-1)[..., None] / size + eps) ** -0.5
    gw = g if weight is None else g * weight
    gx = r * gw - x * (r**3) * ((gw * x).sum(-1)[..., None] / size)
    if weight is None or not wants_grad(weight):
        return gx, None, None
    return gx, sum_to(g * x * r, weight.shape), None


def rope(inputs: Tensors, outputs: Tensors, grads: Tensors) -> Tensors:
    """``rope(x, sin, cos) = x·cos + rotate_half(x)·sin``; ``sin``/``cos`` get no gradient."""
    x, sin, cos = inputs
    (g,) = grads
    half = x.shape[-1] // 2
    u = g * sin
    # rotate_half's transpose: [a, b] -> [b, -a].
    return g * cos + concat([u[..., half:], -u[..., :half]], -1), None, None
