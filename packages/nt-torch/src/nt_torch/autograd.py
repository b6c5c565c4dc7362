"""Functional and differentiable kernels on PyTorch tensors (:mod:`ninetoothed.runtime.autodiff`).

``run`` allocates a functional kernel's outputs and launches it (through the
adapter, so under ``torch.compile`` the launch is a custom-operator node);
``differentiate`` makes a declaration a ``torch.autograd.Function``.  Plain
kernel calls whose tensors require grad are refused (:func:`refuse_grad`):
their results would silently have no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.autodiff import Differentiable, Functional

__all__ = ["concat", "differentiate", "needs_grad", "refuse_grad", "run"]


def run(functional: Functional, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Allocate the outputs, launch the kernel, return the outputs in parameter order."""
    arguments, outputs = functional.kernel_arguments(args, _empty, _clone)
    functional.kernel(*arguments, **kwargs)
    return outputs


def _empty(shape: tuple[int, ...], like: Any, dtype: str | None) -> Any:
    return torch.empty(
        shape, dtype=getattr(torch, dtype) if dtype else like.dtype, device=like.device
    )


def _clone(tensor: Any) -> Any:
    return tensor.clone()


def differentiate(declaration: Differentiable) -> Callable[..., Any]:
    """A callable running ``declaration`` as a ``torch.autograd.Function``."""

    class KernelFunction(torch.autograd.Function):
        # ``setup_context`` apart from ``forward`` is what ``torch.func`` transforms
        # (``grad``, ``vjp``) require of a Function; under ``vmap`` the forward and the
        # backward run batched, their launches through the operators' batching rule.
        generate_vmap_rule = True

        @staticmethod
        def forward(kwargs: dict[str, Any], *args: Any) -> Any:
            outputs = declaration.forward_outputs(args, kwargs)
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            args = inputs[1:]
            outputs = output if isinstance(output, tuple) else (output,)
            if declaration.residuals:
                ctx.mark_non_differentiable(*declaration.residual_outputs(outputs))
            ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
            ctx.others = [None if isinstance(a, torch.Tensor) else a for a in args]
            ctx.output_count = len(outputs)
            ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions), *outputs)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            saved = ctx.saved_tensors
            count = len(ctx.tensor_positions)
            inputs = list(ctx.others)
            for position, tensor in zip(ctx.tensor_positions, saved[:count]):
                inputs[position] = tensor
            visible = grads[: declaration.visible]  # the residuals get none
            gradients = declaration.gradients(tuple(inputs), tuple(saved[count:]), visible)
            return (None, *gradients)

    KernelFunction.__name__ = KernelFunction.__qualname__ = f"{declaration.name}_function"

    def call(*args: Any, **kwargs: Any) -> Any:
        if needs_grad(args, {}):
            result = KernelFunction.apply(kwargs, *args)  # type: ignore[no-untyped-call]
            return declaration.shown(result if isinstance(result, tuple) else (result,))
        return declaration.shown(declaration.forward_outputs(args, kwargs))

    return call


def needs_grad(args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether grad mode is on and a tensor among the arguments requires grad."""
    if not _grad_enabled():
        return False
    for argument in args:
        if isinstance(argument, _Tensor) and argument.requires_grad:
            return True
    if kwargs:  # rarely: tensors passed by keyword
        for argument in kwargs.values():
            if isinstance(argument, _Tensor) and argument.requires_grad:
                return True
    return False


def refuse_grad(kernel_name: str, args: tuple[Any, ...]) -> None:
    """Raise if a tensor argument requires grad while grad mode is on.

    A kernel launch is invisible to autograd: without this its results would
    silently have no gradient.  Runs on every eager call, hence the plain
    loop (about 0.3 us for four arguments).
    """
    if not _grad_enabled():
        return
    for argument in args:
        if isinstance(argument, _Tensor) and argument.requires_grad:
            _raise_requires_grad(kernel_name, args)


def _raise_requires_grad(kernel_name: str, args: tuple[Any, ...]) -> None:
    position = next(
        i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad
    )
    raise LaunchError(
        f"{kernel_name}: argument {position} requires grad, but the kernel has no "
        "backward, so its result would silently get no gradient; declare one with "
        "ninetoothed.differentiable(kernel, backward), or call it under "
        "torch.no_grad() / on .detach()ed tensors"
    )


_grad_enabled = torch.is_grad_enabled
_Tensor = torch.Tensor


def concat(tensors: list[Any], axis: int) -> Any:
    """``torch.cat`` (for :mod:`ninetoothed.library.gradients`)."""
    return torch.cat(tensors, axis)
