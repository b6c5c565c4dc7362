"""Functional and differentiable kernels on Paddle tensors (:mod:`ninetoothed.runtime.autodiff`).

``run`` allocates a functional kernel's outputs and launches it;
``differentiate`` makes a declaration a ``paddle.autograd.PyLayer``.  Plain
kernel calls whose tensors take part in autograd (``stop_gradient=False``
while grad is enabled) are refused (:func:`refuse_grad`): their results would
silently have no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import paddle

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.autodiff import Differentiable, Functional

__all__ = ["concat", "differentiate", "needs_grad", "refuse_grad", "run"]


def run(functional: Functional, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Allocate the outputs, launch the kernel, return the outputs in parameter order."""
    arguments, outputs = functional.kernel_arguments(args, _empty, _clone)
    with paddle.no_grad():
        functional.kernel(*arguments, **kwargs)
    return outputs


def _empty(shape: tuple[int, ...], like: Any, dtype: str | None) -> Any:
    return paddle.empty(list(shape), dtype=dtype or like.dtype).to(like.place)


def _clone(tensor: Any) -> Any:
    return tensor.clone()


def differentiate(declaration: Differentiable) -> Callable[..., Any]:
    """A callable running ``declaration`` as a ``paddle.autograd.PyLayer``."""

    class KernelLayer(paddle.autograd.PyLayer):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, kwargs: dict[str, Any], *args: Any) -> Any:
            outputs = declaration.forward_outputs(args, kwargs)
            ctx.positions = [i for i, a in enumerate(args) if isinstance(a, paddle.Tensor)]
            ctx.others = [None if isinstance(a, paddle.Tensor) else a for a in args]
            ctx.needs = [not args[i].stop_gradient for i in ctx.positions]
            ctx.save_for_backward(*(args[i] for i in ctx.positions), *outputs)
            if declaration.residuals:
                ctx.mark_non_differentiable(*declaration.residual_outputs(outputs))
            return outputs[0] if len(outputs) == 1 else outputs

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            saved = ctx.saved_tensor()
            count = len(ctx.positions)
            inputs = list(ctx.others)
            for position, tensor in zip(ctx.positions, saved[:count]):
                inputs[position] = tensor
            visible = grads[: declaration.visible]  # the residuals get none
            gradients = declaration.gradients(tuple(inputs), tuple(saved[count:]), visible)
            # PyLayer wants one gradient per tensor input, in order, and None
            # for inputs that need none.
            result = tuple(
                gradients[i] if need else None for i, need in zip(ctx.positions, ctx.needs)
            )
            return result[0] if len(result) == 1 else result

    KernelLayer.__name__ = KernelLayer.__qualname__ = f"{declaration.name}_layer"

    def call(*args: Any, **kwargs: Any) -> Any:
        if needs_grad(args, {}):
            result = KernelLayer.apply(kwargs, *args)
            return declaration.shown(result if isinstance(result, tuple) else (result,))
        return declaration.shown(declaration.forward_outputs(args, kwargs))

    return call


def needs_grad(args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether grad is enabled and a tensor among the arguments takes part in autograd."""
    if not paddle.is_grad_enabled():
        return False
    for argument in args:
        if isinstance(argument, paddle.Tensor) and not argument.stop_gradient:
            return True
    return bool(kwargs) and any(
        isinstance(a, paddle.Tensor) and not a.stop_gradient for a in kwargs.values()
    )


def refuse_grad(kernel_name: str, args: tuple[Any, ...]) -> None:
    """Raise if a tensor argument takes part in autograd while grad is enabled."""
    if not paddle.is_grad_enabled():
        return
    for position, argument in enumerate(args):
        if isinstance(argument, paddle.Tensor) and not argument.stop_gradient:
            raise LaunchError(
                f"{kernel_name}: argument {position} has stop_gradient=False, but the kernel has "
                "no backward, so its result would silently get no gradient; declare one with "
                "ninetoothed.differentiable(kernel, backward), or call it under paddle.no_grad() "
                "/ on .detach()ed tensors"
            )


def concat(tensors: list[Any], axis: int) -> Any:
    """``paddle.concat`` (for :mod:`ninetoothed.library.gradients`)."""
    return paddle.concat(tensors, axis)
