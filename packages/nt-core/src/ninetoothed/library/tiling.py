"""Arrangement pieces the library's kernels share, written with meta-operations only.

* :func:`broadcast` lines a tensor up with an output of higher or equal rank,
  as broadcasting does: missing leading dimensions are added and dimensions
  declared with a literal size 1 are expanded (``Tensor(shape=(1, None))``).
* :func:`flat_blocks` is one block of ``block`` elements per program over all
  elements of a tensor of any rank and any strides.
* :func:`rows` is one whole row (dimension ``dim``) per program, the row a
  1-D tile; :func:`row_vector` lines a 1-D tensor (a weight) up with those rows.

``Tile`` is what an application's parameters are at run time: a tile, a Triton
value.  The kernels annotate their applications with it for the type checker;
the code generator ignores annotations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ninetoothed.symbol import Symbol, block_size
from ninetoothed.tensor import Tensor

Tile = Any
"""An application's parameter: the tile a program gets (a Triton value)."""

Pattern = tuple[int | None, ...]
"""A broadcast pattern, as ``Tensor(shape=...)`` takes it: 1 where a dimension of an
input is broadcast to the output's size, None elsewhere."""


class Premade(NamedTuple):
    """What ``ninetoothed.make`` takes to build one variant of a library kernel."""

    arrangement: Any
    """The arrangement, with any variant's values bound (``functools.partial``)."""
    application: Any
    tensors: tuple[Tensor, ...]
    options: dict[str, Any] = {}
    """``make``'s options (``num_warps``, ``max_num_configs`` …)."""
    name: str | None = None
    """The kernel's name; the module's by default."""


def constexpr_at(ndim: int, dim: int = -1, **options: Any) -> tuple[dict[str, Any] | None, ...]:
    """``shape_options`` that make only size ``dim`` of an ``ndim``-D tensor constexpr.

    A whole row as one tile needs its length at compile time (tile sizes are
    powers of two, padded); ``options`` add to that size's options.
    """
    along = dim % ndim
    return tuple({"constexpr": True, **options} if d == along else None for d in range(ndim))


def broadcast(tensor: Tensor, like: Tensor) -> Tensor:
    """``tensor`` broadcast to the shape of ``like``: leading dimensions added, sizes
    declared as a literal 1 expanded."""
    arranged = tensor
    for _ in range(like.ndim - tensor.ndim):
        arranged = arranged.unsqueeze(0)
    sizes = tuple(
        target if isinstance(size, int) and size == 1 else -1
        for size, target in zip(arranged.shape, like.shape)
    )
    return arranged.expand(sizes) if any(size != -1 for size in sizes) else arranged


def flat_blocks(tensor: Tensor, block: Any) -> Tensor:
    """Blocks of ``block`` consecutive elements (row-major) of a tensor of any rank."""
    flat = tensor.flatten() if tensor.ndim > 1 else tensor
    return flat.tile((block,))


def pointwise(*tensors: Tensor, BLOCK_SIZE: Symbol = block_size(1024, 8192)) -> tuple[Tensor, ...]:
    """The arrangement of element-wise kernels: every tensor broadcast to the last
    one (the output) and cut into blocks of ``BLOCK_SIZE`` elements, one per program."""
    output = tensors[-1]
    return tuple(flat_blocks(broadcast(tensor, output), BLOCK_SIZE) for tensor in tensors)


def rows(tensor: Tensor, dim: int = -1) -> Tensor:
    """One program per row along ``dim``: the tile is the whole row, one-dimensional."""
    ndim = tensor.ndim
    along = dim % ndim
    arranged = tensor.tile(tuple(-1 if d == along else 1 for d in range(ndim)))
    others = tuple(d for d in range(ndim) if d != along)
    if others:
        arranged.dtype = arranged.dtype.squeeze(others)
    return arranged


def row_vector(vector: Tensor, like: Tensor) -> Tensor:
    """A 1-D tensor as the same whole-row tile for every row of ``like`` (rows along
    the last dimension, arranged by :func:`rows`)."""
    arranged = vector.tile((-1,))
    for _ in range(like.ndim - 1):
        arranged = arranged.unsqueeze(0)
    return arranged.expand(like.shape)


def ones(count: int) -> tuple[int, ...]:
    """``(1,) * count``: tile sizes of dimensions that hold one index per program."""
    return (1,) * count


def keep(count: int) -> tuple[int, ...]:
    """``(-1,) * count``: sizes ``expand`` leaves as they are."""
    return (-1,) * count


def leading(count: int) -> tuple[int, ...]:
    """The first ``count`` dimensions, for ``squeeze``."""
    return tuple(range(count))


def pointwise_tensors(patterns: Sequence[Pattern], ndim: int) -> tuple[Tensor, ...]:
    """The tensors of an element-wise kernel: inputs of these broadcast patterns, and
    an ``ndim``-D output."""
    return (*(Tensor(shape=pattern) for pattern in patterns), Tensor(ndim))
