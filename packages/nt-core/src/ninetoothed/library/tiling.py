"""Arrangement pieces the library's kernels share, written with meta-operations only.

* :func:`pointwise` broadcasts every tensor to the output with the language's
  ``expand_as`` (``Tensor(shape=(1, None))`` declares a broadcast row) and cuts
  it into :func:`flat_blocks`: one block of ``block`` elements per program
  over all elements of a tensor of any rank and any strides.
* :func:`rows` is one whole row (dimension ``dim``) per program, the row a
  1-D tile; :func:`row_vector` lines a 1-D tensor (a weight) up with those rows.

``Tile`` is what an application's parameters are at run time: a tile, a Triton
value.  The kernels annotate their applications with it for the type checker;
the code generator ignores annotations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor

__all__ = [
    "Pattern",
    "Premade",
    "Tile",
    "constexpr_at",
    "flat_blocks",
    "keep",
    "leading",
    "ones",
    "pointwise",
    "pointwise_tensors",
    "row_vector",
    "rows",
]

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


def constexpr_at(ndim: int, dim: int = -1, **options: Any) -> tuple[dict[str, Any], ...]:
    """``shape_options`` that make only size ``dim`` of an ``ndim``-D tensor constexpr.

    A whole row as one tile needs its length at compile time (tile sizes are
    powers of two, padded); ``options`` add to that size's options.
    """
    shape_options: list[dict[str, Any]] = [{}] * ndim  # no options: the same empty dict
    shape_options[dim] = {"constexpr": True, **options}
    return tuple(shape_options)


def flat_blocks(tensor: Tensor, block: Any) -> Tensor:
    """Blocks of ``block`` consecutive elements (row-major) of a tensor of any rank."""
    return tensor.flatten().tile((block,))


def pointwise(*tensors: Tensor, BLOCK_SIZE: Symbol = block_size(1024, 8192)) -> tuple[Tensor, ...]:
    """The arrangement of element-wise kernels: every tensor broadcast to the last
    one (the output, ``expand_as``) and cut into blocks of ``BLOCK_SIZE`` elements,
    one per program."""
    *_, output = tensors
    return tuple(flat_blocks(tensor.expand_as(output), BLOCK_SIZE) for tensor in tensors)


def rows(tensor: Tensor, dim: int = -1) -> Tensor:
    """One program per row along ``dim``: the tile is the whole row, one-dimensional
    (the tile's other dimensions, of size 1, squeezed; the library's tensors have
    symbolic sizes, so the row itself never is a literal 1)."""
    tile_shape = [1] * tensor.ndim
    tile_shape[dim] = -1
    arranged = tensor.tile(tile_shape)
    arranged.dtype = arranged.dtype.squeeze()
    return arranged


def row_vector(vector: Tensor, like: Tensor) -> Tensor:
    """A 1-D tensor as the same whole-row tile for every row of ``like`` (rows along
    the last dimension, arranged by :func:`rows`)."""
    return vector.tile((-1,)).expand_as(like)


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
