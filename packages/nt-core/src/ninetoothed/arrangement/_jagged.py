"""Jagged tensors (``Tensor(ndim, jagged_dim=d)``): one length per batch entry.

Upstream NineToothed's semantics, which this module and the backends follow:

* The argument is a torch nested tensor with ``layout=torch.jagged``:
  dimension 0 is the batch, dimension ``d`` has its own length per batch
  entry, and the data are its ``values()`` (the entries one after another
  along ``d``) with ``offsets()`` (entry ``b`` holds ``offsets[b]`` up to
  ``offsets[b + 1]``).
* On the host the jagged dimension's size is the **longest** entry's length:
  the grid, the outermost shapes and the sizes other tensors must agree with
  are taken with it (a dense output of ``to_padded_tensor`` has that size).
  The batch dimension has no stride of its own (0): an entry starts at its
  offset.
* In the kernel, a tile's batch entry ``b`` is its source index along
  dimension 0; the jagged dimension's size is that entry's own length,
  ``offsets[b + 1] - offsets[b]``, so elements past it are masked (loads read
  ``other``, stores are skipped), and addresses start at ``offsets[b]``.
* Jagged parameters whose lengths shape the grid (their jagged size is in
  an outermost shape), or that are tied to one another (an agreement of
  their jagged dimensions, or one's jagged size in the other's levels), must
  have the same offsets in a call: a program's tile of one would otherwise
  stand for a different part of its entry than the other's.  A jagged
  parameter walked below the grid alone (the keys of variable-length
  attention, ``cu_seqlens_k`` beside the queries' ``cu_seqlens_q``) may have
  its own, as upstream allows: each tensor is masked by its own lengths
  (:func:`ninetoothed.spec._jagged_groups.offset_groups`).

Supported: every meta-operation on the other tensors (``expand`` to the
jagged size, as upstream's copy does), and on the jagged tensor every
operation that keeps each tile inside one batch entry (tile size 1 along
dimension 0).  Refused, with an error naming it: tiles spanning several batch
entries, ``x.source[...]`` gathers from a jagged tensor, and jagged arguments
from frameworks without nested tensors (PaddlePaddle, JAX).
"""

from __future__ import annotations

from typing import Any

from ninetoothed.arrangement.symbol import Symbol
from ninetoothed.errors import MetaOperationError

__all__ = ["check_jagged_dim", "check_jagged_size"]


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


def check_jagged_size(size: Any, jagged_dim: int | None, name: str) -> None:
    """Refuse a literal size for the jagged dimension: its length varies per batch entry."""
    if jagged_dim is not None and not isinstance(size, Symbol):
        raise MetaOperationError(
            f"Tensor {name}: the jagged dimension {jagged_dim} has a length per batch entry, so "
            f"it cannot be given the fixed size {size!r}; leave its size None"
        )
