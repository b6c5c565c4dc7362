"""Upstream NineToothed's ``simulate_arrangement``: an arrangement as index tensors.

Upstream runs a copying kernel to find which source element each element of an
arrangement reads; here the reference evaluator (:mod:`ninetoothed.arrangement.reference`)
answers the same question on the host, so no GPU is needed.  The result is
returned as PyTorch tensors, as upstream returns it; PyTorch is imported only
when this function is called.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.compat.eval import eval as evaluate_indices
from ninetoothed.errors import ArrangementError

__all__ = ["simulate_arrangement"]


def simulate_arrangement(
    arrangement: Callable[..., Any], tensors: Sequence[Any], device: Any = None
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Simulate ``arrangement`` on ``tensors`` of concrete shape.

    ``tensors`` are :class:`~ninetoothed.Tensor` objects with concrete shapes
    (``Tensor(shape=(4, 8))``; ``Tensor(0)`` for scalars), and the arrangement
    must use concrete tile sizes (bind them with ``functools.partial``).  Other
    values in ``tensors`` are handed to the arrangement as they are, as
    ``make`` does.

    Returns ``(sources, targets)``, one entry per tensor parameter, in order:
    ``sources[i]`` is ``torch.arange`` over the source's elements in its shape
    (each element holds its own flat index); ``targets[i]`` has the arranged
    tensor's shape with the outermost level flattened into one dimension (one
    entry per program), followed by the shapes of the deeper levels, and holds
    the flat index of the source element each element reads, or ``-1`` where
    it is masked.  Scalars give ``tensor(0)`` for both.  Tensors are made on
    ``device``: by default CUDA when PyTorch sees a GPU, else the CPU (upstream
    always defaults to CUDA).
    """
    try:
        import torch
    except ImportError as error:
        raise ImportError(
            "ninetoothed.debugging.simulate_arrangement returns PyTorch tensors: install torch "
            "(pip install nt-torch)"
        ) from error
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    parameters = [tensor for tensor in tensors if isinstance(tensor, Tensor)]
    arranged = arrangement(*tensors)
    if isinstance(arranged, Tensor):
        arranged = (arranged,)
    arranged = tuple(arranged)
    if len(arranged) != len(parameters):
        raise ArrangementError(
            f"simulate_arrangement: the arrangement returned {len(arranged)} values for "
            f"{len(parameters)} tensors"
        )
    sources = []
    targets = []
    for tensor, result in zip(parameters, arranged):
        if tensor.ndim == 0:
            sources.append(torch.tensor(0, device=device))
            targets.append(torch.tensor(0, device=device))
            continue
        shape = _concrete_shape(tensor)
        if not isinstance(result, Tensor):
            raise ArrangementError(
                f"simulate_arrangement: the arrangement returned {type(result).__name__} "
                f"{result!r} for {tensor.name}; it must return a Tensor for each tensor"
            )
        try:
            indices = evaluate_indices(result)
        except ArrangementError as error:
            raise ArrangementError(
                f"simulate_arrangement: {error} (tile sizes must be concrete: bind them with "
                "functools.partial)"
            ) from None
        outermost = result.ndim
        programs = math.prod(indices.shape[:outermost])
        sources.append(torch.arange(math.prod(shape), device=device).view(shape))
        targets.append(
            torch.from_numpy(indices.reshape(programs, *indices.shape[outermost:]))
            .to(torch.int64)
            .to(device)
        )
    return tuple(sources), tuple(targets)


def _concrete_shape(tensor: Tensor) -> tuple[int, ...]:
    shape = tensor.source.shape
    if not all(isinstance(size, int) for size in shape):
        raise ArrangementError(
            f"simulate_arrangement: {tensor.name} has the symbolic shape {shape}; give the "
            "tensors concrete shapes, e.g. Tensor(shape=(4, 8))"
        )
    return tuple(size for size in shape if isinstance(size, int))
