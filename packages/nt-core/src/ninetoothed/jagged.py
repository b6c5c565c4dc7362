"""Jagged tensors (``Tensor(ndim, jagged_dim=d)``): accepted, described, not generated yet.

Upstream's jagged tensors take torch nested tensors (``layout=torch.jagged``):
dimension 0 is the batch, dimension ``d`` has its own length per batch entry;
the kernel covers the longest entry and masks past each entry's length.
Here a jagged tensor can be made and arranged (its ``jagged_dim`` is
checked and kept), but generating a kernel for one raises
:class:`NotImplementedError` naming what is missing (see :data:`MISSING`),
rather than treating a nested tensor as a dense one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ninetoothed.errors import MetaOperationError

MISSING = (
    "jagged tensors (Tensor(jagged_dim=...)) are not supported yet: the tensor can be made "
    "and arranged, but kernels for it are not generated; missing are torch nested-tensor "
    "arguments (values and offsets) in the adapters, the per-batch-entry length of the "
    "jagged dimension in code generation, and the longest entry's length for the launch grid"
)
"""The message of the :class:`NotImplementedError` that :func:`refuse` raises."""


def check_jagged_dim(jagged_dim: Any, ndim: int, name: str) -> int | None:
    """``jagged_dim`` checked: ``None``, or a dimension after the batch dimension 0."""
    if jagged_dim is None:
        return None
    if not isinstance(jagged_dim, int) or isinstance(jagged_dim, bool):
        raise MetaOperationError(
            f"Tensor {name}: jagged_dim must be an int, got {type(jagged_dim).__name__} "
            f"{jagged_dim!r}"
        )
    if not 1 <= jagged_dim < ndim:
        raise MetaOperationError(
            f"Tensor {name}: jagged_dim must name a dimension after the batch dimension 0 of "
            f"its {ndim} dimensions (1 to {ndim - 1}), got {jagged_dim}"
        )
    return jagged_dim


def refuse(function: str, sources: Iterable[Any]) -> None:
    """Raise :class:`NotImplementedError` if any of ``sources`` is jagged."""
    for source in sources:
        if getattr(source, "jagged_dim", None) is not None:
            raise NotImplementedError(f"{function}: {source.name}: {MISSING}")
