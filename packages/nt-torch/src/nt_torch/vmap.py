"""``torch.func.vmap`` of a kernel: the batching rule of its custom operator.

A kernel's parameters have a fixed number of dimensions, and whether a batch
dimension may be merged into one of them depends on what the application
computes, which the arrangement alone does not say.  So the rule folds only
when the kernel declares it (``ninetoothed.batching(kernel, "fold-leading")``,
see :mod:`ninetoothed.runtime.autodiff`): the batch dimension is merged into each
tensor's leading dimension and the kernel launches once.  Otherwise it loops:
one launch per batch element, on views of the batched tensors (the cost is
``batch_size`` launches; the writes land in the batched outputs directly).

Kernels write into their outputs, so an output must be batched whenever an
input is (allocate it inside the vmapped function, e.g. ``torch.empty_like``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.autodiff import batching_of
from ninetoothed.runtime.hookspecs import GeneratedKernel
from ninetoothed.runtime.make import Kernel

__all__ = ["rule"]


def rule(kernel: Kernel, launch: Callable[..., Any]) -> Callable[..., Any]:
    """The ``torch.library.register_vmap`` rule of ``kernel``'s operator; ``launch`` runs it."""

    def batched(info: Any, in_dims: list[int | None], *args: Any, **kwargs: Any) -> Any:
        kwargs = {key: value for key, value in kwargs.items() if value is not None}
        batched_launch(kernel.generated, launch, info.batch_size, list(in_dims), list(args), kwargs)
        return None, None

    return batched


def batched_launch(
    kernel: GeneratedKernel,
    launch: Callable[..., Any],
    batch_size: int,
    in_dims: list[int | None],
    args: list[Any],
    kwargs: dict[str, Any],
) -> None:
    """Launch ``kernel`` on arguments batched along ``in_dims``: folded, else in a loop."""
    names = tuple(parameter.name for parameter in kernel.spec.parameters)
    moved = _batch_first(kernel, names, set(kernel.outputs), in_dims, args)
    folded = None
    if batching_of(kernel) == "fold-leading" and _foldable(kernel, in_dims, moved):
        folded = _folded(in_dims, moved)
    if folded is not None:
        launch(*folded, **kwargs)
        return
    for index in range(batch_size):
        launch(
            *(arg[index] if dim is not None else arg for arg, dim in zip(moved, in_dims)), **kwargs
        )


def _batch_first(
    kernel: GeneratedKernel,
    names: tuple[str, ...],
    outputs: set[str],
    in_dims: list[int | None],
    args: list[Any],
) -> list[Any]:
    """The arguments with their batch dimension first (views: writes land in place)."""
    for name, dim in zip(names, in_dims):
        if name in outputs and dim is None:
            raise LaunchError(
                f"{kernel.spec.label} under vmap: output {name!r} is not batched but the inputs "
                "are; the kernel writes into it, so allocate it inside the vmapped function "
                "(e.g. torch.empty_like of a batched input)"
            )
    return [
        arg.movedim(dim, 0) if dim is not None and dim != 0 else arg
        for arg, dim in zip(args, in_dims)
    ]


def _foldable(kernel: GeneratedKernel, in_dims: list[int | None], moved: list[Any]) -> bool:
    """Whether every tensor is batched and has a leading dimension to merge into."""
    for parameter, arg, dim in zip(kernel.spec.parameters, moved, in_dims):
        if parameter.is_scalar:
            continue
        if dim is None or arg.dim() < 2:
            return False
    return True


def _folded(in_dims: list[int | None], moved: list[Any]) -> list[Any] | None:
    """Batched tensors with the batch merged into their leading dimension, as views.

    None when some tensor cannot be viewed so (its batch and leading strides
    do not combine): writes into a copy would be lost, so the caller loops.
    """
    folded = []
    for arg, dim in zip(moved, in_dims):
        if dim is None or not isinstance(arg, torch.Tensor):
            folded.append(arg)
            continue
        try:
            folded.append(arg.view(-1, *arg.shape[2:]))
        except RuntimeError:
            return None
    return folded
