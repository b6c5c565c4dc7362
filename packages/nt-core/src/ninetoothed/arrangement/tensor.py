"""Hierarchical symbolic tensors: how they are made, and their meta-operations.

A :class:`Tensor` holds no data: its ``shape`` and ``strides`` are symbolic.
What it records and the attributes that read it are
:class:`~ninetoothed.arrangement._levels.TensorLevels`; this module makes
tensors and derives new ones.
Meta-operations (``tile``, ``expand``, ``expand_as``, ``squeeze``,
``unsqueeze``, ``permute``, ``flatten``, ``ravel``, ``pad`` and slicing)
return new tensors and never move data.  ``tile`` makes a hierarchy: the
result's ``dtype`` is the tensor of one tile.

How every element finds its source element
------------------------------------------
Each dimension of each level owns a fresh *index variable*.  When a
meta-operation replaces dimensions, it records a **binding** that defines
each replaced variable in terms of the new ones (``tile``: ``old = outer *
stride + inner * dilation``; ``flatten``: ``old = new // inner_size %
size``; ``expand``/``squeeze``: ``old = 0``; ``pad``: ``old = new -
before``; slicing: ``old = start + new * step``), together with the range the
replaced variable must stay in (``0 <= old < old_size``).  Bindings only ever
get added and variables are never reused, so the bindings of all levels of an
arranged tensor can simply be united (the records live in
:mod:`ninetoothed.arrangement.mapping`).  Substituting them into the source tensor's own
variables gives, for any element of any level, the source index it reads; the
ranges give the mask.  :mod:`ninetoothed.arrangement.reference` does that on
concrete sizes (the reference semantics); the code generator does it
symbolically.  Argument checks live in :mod:`ninetoothed.arrangement._checks`,
indexing in :mod:`ninetoothed.arrangement._slicing`, tile counts, flattening
and padding in :mod:`ninetoothed.arrangement._reshaping`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ninetoothed.arrangement._broadcasting import broadcast_sizes
from ninetoothed.arrangement._checks import (
    as_sequence,
    check_rank,
    check_size,
    is_literal,
    is_minus_one,
    normalize_dims,
    per_dim_options,
    same_size,
)
from ninetoothed.arrangement._jagged import check_jagged_dim, check_jagged_size
from ninetoothed.arrangement._levels import TensorLevels
from ninetoothed.arrangement._reshaping import (
    flatten_range,
    merged_bindings,
    padded_dims,
    pairs_from_flat,
    tile_count,
)
from ninetoothed.arrangement._slicing import index_level
from ninetoothed.arrangement.dtype import declared
from ninetoothed.arrangement.mapping import (
    Binding,
    Dim,
    Requirement,
    fresh_requirement_key,
    fresh_variable,
    is_broadcast,
)
from ninetoothed.arrangement.names import GENERATED_PREFIX
from ninetoothed.arrangement.symbol import Symbol, SymbolLike, product
from ninetoothed.compat.eval import eval as evaluate_indices
from ninetoothed.compat.eval import subs as substitute
from ninetoothed.errors import MetaOperationError

__all__ = ["Tensor"]

_tensor_ids = itertools.count()


class Tensor(TensorLevels):
    """A symbolic tensor, possibly hierarchical.

    ``Tensor(2)`` is a matrix of symbolic shape; ``Tensor(shape=(4, None))``
    fixes the first size; ``Tensor(0)`` is a scalar parameter.  ``other`` is
    the value masked loads read outside the source (``float("-inf")`` for a
    softmax input); ``shape_options`` (one dict, or one per dimension) is
    passed to each size symbol, e.g. ``{"constexpr": True, "upper_bound":
    128}``.  ``constexpr=True`` on a scalar makes it a compile-time value;
    ``value`` fixes a constexpr scalar at ``make`` time.  ``dtype`` declares
    the element type calls must pass (``ninetoothed.float16``, ``ntl.float16``
    or a framework's ``torch.float16``), kept as its canonical name.
    ``jagged_dim=d`` makes it jagged: it takes a torch nested tensor
    (``layout=torch.jagged``) whose dimension ``d`` has a length per batch
    entry (dimension 0); see :mod:`ninetoothed.arrangement._jagged`.
    """

    def __init__(
        self,
        ndim: int | None = None,
        *,
        shape: Sequence[SymbolLike | None] | None = None,
        dtype: Any = None,
        name: str | None = None,
        other: float | int | None = None,
        shape_options: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        constexpr: bool | None = None,
        value: Any = None,
        strides: Sequence[SymbolLike | None] | None = None,
        jagged_dim: int | None = None,
    ) -> None:
        ndim = check_rank(ndim, shape)
        if name is not None and not name.isidentifier():
            raise MetaOperationError(f"Tensor: name must be a Python identifier, got {name!r}")
        self.name: str = name if name is not None else f"{GENERATED_PREFIX}{next(_tensor_ids)}"
        sizes = self._sizes(shape, per_dim_options(shape_options, ndim), ndim)
        given_strides = tuple(strides) if strides is not None else (None,) * ndim
        if len(given_strides) != ndim:
            raise MetaOperationError(
                f"Tensor {self.name}: strides {tuple(strides or ())} do not have {ndim} entries"
            )
        self._strides: tuple[SymbolLike, ...] = tuple(
            Symbol(self.stride_string(index)) if stride is None else stride
            for index, stride in enumerate(given_strides)
        )
        self._dims: tuple[Dim, ...] = tuple(Dim(fresh_variable(), size) for size in sizes)
        self._dtype: Any = dtype if dtype is None or isinstance(dtype, Tensor) else declared(dtype)
        self._bindings: dict[str, Binding] = {}
        self._requirements: dict[str, Requirement] = {}
        self._source: Tensor = self
        self._jagged_dim = check_jagged_dim(jagged_dim, ndim, self.name)
        if self._jagged_dim is not None:
            check_jagged_size(sizes[self._jagged_dim], self._jagged_dim, self.name)
        self.other = other
        self.constexpr = bool(constexpr)
        self.value = value
        if ndim != 0 and (constexpr or value is not None):
            raise MetaOperationError(
                f"Tensor {self.name}: constexpr/value apply to scalars, i.e. Tensor(0)"
            )
        self.source_variables: tuple[str, ...] = tuple(dim.variable for dim in self._dims)

    def _sizes(
        self, shape: Sequence[SymbolLike | None] | None, options: list[dict[str, Any]], ndim: int
    ) -> list[SymbolLike]:
        """The given sizes, with a fresh size symbol wherever none is given."""
        given = tuple(shape) if shape is not None else (None,) * ndim
        sizes: list[SymbolLike] = []
        for index, size in enumerate(given):
            if size is None:
                sizes.append(Symbol(self.size_string(index), **options[index]))
            else:
                check_size(size, "shape", index)
                sizes.append(size)
        return sizes

    # ----------------------------------------------------- upstream's inspection
    def eval(self, subs: Mapping[Any, Any] | None = None) -> Any:
        """The source index each element reads, as a numpy array: see :func:`ninetoothed.eval`."""
        return evaluate_indices(self, subs)

    def subs(self, subs: Mapping[Any, Any]) -> Tensor:
        """This arrangement with symbols given values: see :func:`ninetoothed.subs`."""
        return substitute(self, subs)

    # ------------------------------------------------------ meta-operations
    def tile(
        self,
        tile_shape: Sequence[SymbolLike],
        strides: Sequence[SymbolLike] | None = None,
        dilation: Sequence[SymbolLike] | None = None,
        floor_mode: bool = False,
    ) -> Tensor:
        """Split every dimension into tiles: the result's ``dtype`` is one tile.

        ``-1`` in ``tile_shape`` means the whole dimension.  ``strides`` (default:
        the tile shape; ``-1`` entries also mean that default) is the step
        between tiles, so strides smaller than the tile give overlapping
        windows; ``dilation`` spaces a tile's elements.  The last tile of a
        dimension may stick out of it (it is masked) unless ``floor_mode`` drops
        such tiles.
        """
        operation = "tile"
        tile_shape = as_sequence(tile_shape, operation, "tile_shape")
        self._check_length(tile_shape, operation, "tile_shape")
        strides = (
            (-1,) * self.ndim if strides is None else as_sequence(strides, operation, "strides")
        )
        self._check_length(strides, operation, "strides")
        dilation = (
            (1,) * self.ndim if dilation is None else as_sequence(dilation, operation, "dilation")
        )
        self._check_length(dilation, operation, "dilation")

        outer_dims: list[Dim] = []
        inner_dims: list[Dim] = []
        bindings = dict(self._bindings)
        for index, (dim, tile_size, stride, spacing) in enumerate(
            zip(self._dims, tile_shape, strides, dilation)
        ):
            whole = is_minus_one(tile_size)
            if whole:
                tile_size = dim.size
            else:
                check_size(tile_size, "tile_shape", index, positive=True)
            if is_minus_one(stride):
                stride = tile_size
            else:
                check_size(stride, "strides", index, positive=True)
            check_size(spacing, "dilation", index, positive=True)
            if whole and is_literal(spacing, 1) and stride is tile_size:
                outer_size: SymbolLike = 1
            else:
                outer_size = tile_count(
                    self._source.name, index, dim, tile_size, stride, spacing, floor_mode
                )
            outer = Dim(fresh_variable(), outer_size)
            inner = Dim(fresh_variable(), tile_size)
            # Tiles side by side (the step is the tile, no gaps, no floor): the range
            # holds wherever the size is a multiple of the tile (see Binding.divisor).
            plain = same_size(stride, tile_size) and is_literal(spacing, 1) and not floor_mode
            bindings[dim.variable] = Binding(
                Symbol(outer.variable) * stride + Symbol(inner.variable) * spacing,
                dim.size,
                divisor=tile_size if plain else None,
                outer=outer.variable if plain else None,
            )
            outer_dims.append(outer)
            inner_dims.append(inner)
        inner_level = self._derive(tuple(inner_dims), bindings, self._dtype)
        return self._derive(tuple(outer_dims), bindings, inner_level)

    def expand(self, sizes: Sequence[SymbolLike]) -> Tensor:
        """Repeat singleton dimensions to ``sizes`` (``-1`` keeps a dimension)."""
        operation = "expand"
        sizes = as_sequence(sizes, operation, "sizes")
        if len(sizes) > self.ndim:
            # Upstream zips the sizes with the dimensions, so extra ones are
            # ignored: layer norms write ``w.tile((H,)).expand((M, -1))`` for
            # "the one tile of w, for each of M rows".  The same truncation is
            # safe here because every expanded dimension must still be 1 at
            # run time (below), and the level's tiles are paired with the grid.
            sizes = sizes[: self.ndim]
        self._check_length(sizes, operation, "sizes")
        dims: list[Dim] = []
        bindings = dict(self._bindings)
        requirements = dict(self._requirements)
        for index, (dim, size) in enumerate(zip(self._dims, sizes)):
            if is_minus_one(size) or same_size(size, dim.size):
                dims.append(dim)
                continue
            check_size(size, "sizes", index)
            bound: SymbolLike | None = None
            if isinstance(dim.size, Symbol):
                # Upstream defers the check to run time: the size must be 1
                # there, or 0 (an empty tensor: every element masked).
                requirements[fresh_requirement_key()] = Requirement(
                    dim.size,
                    f"expand on {self._source.name}: dimension {index} must have size 1 "
                    f"(or 0) to be expanded to {size}",
                    allowed=(0, 1),
                )
                bound = dim.size
            elif dim.size != 1:
                raise MetaOperationError(
                    f"expand on {self._source.name}: dimension {index} has size {dim.size}, "
                    f"not 1, so it cannot be expanded to {size}"
                )
            new = Dim(fresh_variable(), size)
            bindings[dim.variable] = Binding(0, bound)
            dims.append(new)
        tensor = self._derive(tuple(dims), bindings, self._dtype)
        tensor._requirements = requirements
        return tensor

    def expand_as(self, other: Tensor) -> Tensor:
        """This level broadcast to the shape of ``other``'s level, as ``torch.Tensor.expand_as``.

        Leading dimensions of size 1 are added up to ``other``'s rank, then every
        dimension declared with the literal size 1 is expanded to ``other``'s
        size there; a symbolic size is kept (where the kernel reads both tensors
        at the same index, calls check that it equals ``other``'s), as is a size
        equal to ``other``'s.  Two different literal sizes are an error.  So
        ``Tensor(shape=(1, None)).expand_as(Tensor(3))`` is a row read by every
        row of a 3-D output.  See :mod:`ninetoothed.arrangement._broadcasting`.
        """
        if not isinstance(other, Tensor):
            raise MetaOperationError(
                f"expand_as on {self._source.name}: other must be a Tensor, got "
                f"{type(other).__name__} {other!r}"
            )
        leading, sizes = broadcast_sizes(self.shape, other.shape, self._source.name)
        tensor = self
        for _ in range(leading):
            tensor = tensor.unsqueeze(0)
        return tensor.expand(sizes)

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Remove the singleton dimension(s) ``dim``; without ``dim``, every dimension
        whose size is the literal 1 (as ``torch.squeeze``: a symbolic size is kept,
        even if it is 1 at run time)."""
        operation = "squeeze"
        if dim is None:
            dim = tuple(i for i, d in enumerate(self._dims) if is_literal(d.size, 1))
        targets = normalize_dims(dim, self.ndim, operation, self._source.name)
        bindings = dict(self._bindings)
        requirements = dict(self._requirements)
        sources = [d.variable for d in self._source._dims]
        for index in targets:
            size = self._dims[index].size
            if is_broadcast(self._dims[index].variable, sources, bindings):
                # Every index reads the same element (an expanded dimension, or a
                # tile of one): index 0 stands for all, as upstream reads it.
                pass
            elif isinstance(size, Symbol):
                # Symbolic sizes may still be 1 at run time (the paper's conv2d
                # squeezes channels/channels): require it, checked at launch.  Or 0,
                # as for expand: an empty tensor, whose every element is masked
                # (ntops's bincount of no values squeezes a tile of an empty input).
                requirements[fresh_requirement_key()] = Requirement(
                    size,
                    f"squeeze on {self._source.name}: dimension {index} must have size 1",
                    allowed=(0, 1),
                )
            elif size != 1:
                raise MetaOperationError(
                    f"squeeze on {self._source.name}: dimension {index} has size {size}, not 1"
                )
            bindings[self._dims[index].variable] = Binding(0, None)
        dims = tuple(d for i, d in enumerate(self._dims) if i not in targets)
        tensor = self._derive(dims, bindings, self._dtype)
        tensor._requirements = requirements
        return tensor

    def unsqueeze(self, dim: int) -> Tensor:
        """Insert a singleton dimension at position ``dim``."""
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise MetaOperationError(f"unsqueeze: dim must be an int, got {dim!r}")
        if not -self.ndim - 1 <= dim <= self.ndim:
            raise MetaOperationError(
                f"unsqueeze on {self._source.name}: dim {dim} is out of range for "
                f"{self.ndim + 1} dimensions"
            )
        position = dim if dim >= 0 else dim + self.ndim + 1
        dims = list(self._dims)
        dims.insert(position, Dim(fresh_variable(), 1))
        return self._derive(tuple(dims), dict(self._bindings), self._dtype)

    def permute(self, dims: Sequence[int]) -> Tensor:
        """Reorder the dimensions: result dimension ``i`` is dimension ``dims[i]``."""
        dims = as_sequence(dims, "permute", "dims")
        if sorted(self._normalize_index(d, "permute") for d in dims) != list(range(self.ndim)):
            raise MetaOperationError(
                f"permute on {self._source.name}: {tuple(dims)} is not a permutation of "
                f"{tuple(range(self.ndim))}"
            )
        order = [self._normalize_index(d, "permute") for d in dims]
        return self._derive(tuple(self._dims[i] for i in order), dict(self._bindings), self._dtype)

    def flatten(self, start_dim: int | None = None, end_dim: int | None = None) -> Tensor:
        """Merge dimensions ``start_dim`` up to, **not including**, ``end_dim``.

        Unlike ``torch.flatten``, ``end_dim`` is exclusive (as in a slice), so
        ``flatten(end_dim=3)`` on six dimensions merges the first three and
        ``flatten(start_dim=1)`` merges all but the first.  The merged index is
        row-major: the last merged dimension varies fastest.  Merging one
        dimension (``flatten()`` of a 1-D tensor) leaves it as it is, so code
        that flattens a tensor of any rank needs no special case.
        """
        start, stop = flatten_range(self._source.name, self.ndim, start_dim, end_dim)
        if stop - start == 1:  # one dimension merged: itself (a 1-D tensor's flatten())
            return self._derive(self._dims, dict(self._bindings), self._dtype)
        merged = self._dims[start:stop]
        new = Dim(fresh_variable(), product([d.size for d in merged]))
        bindings = {**self._bindings, **merged_bindings(merged, new)}
        dims = self._dims[:start] + (new,) + self._dims[stop:]
        return self._derive(dims, bindings, self._dtype)

    def ravel(self) -> Tensor:
        """Merge all levels into one: levels (N, P, Q) and (C, R, S) give (N, P, Q, C, R, S)."""
        levels = self.levels()
        dims = tuple(dim for level in levels for dim in level._dims)
        tensor = self._derive(dims, self.all_bindings(), levels[-1]._dtype)
        tensor._requirements = self.all_requirements()
        return tensor

    def pad(self, padding: Sequence[Any]) -> Tensor:
        """Pad dimension ``i`` with ``padding[i] = (before, after)`` virtual elements.

        ``torch.nn.functional.pad``'s flat form is accepted too: amounts only,
        ``(before, after)`` of the last dimension first, then of the one before
        it, and so on (``(1, 1, 2, 2)`` pads the last dimension by 1 and the
        second last by 2 on each side; dimensions not reached are not padded).
        Padded elements read the tensor's ``other`` value and are not stored.
        A negative amount crops that many elements instead, as in
        ``torch.nn.functional.pad``.
        """
        padding = as_sequence(padding, "pad", "padding")
        padding = pairs_from_flat(padding, self.ndim, self._source.name)
        self._check_length(padding, "pad", "padding")
        bindings = dict(self._bindings)
        dims = padded_dims(self._source.name, self._dims, padding, bindings)
        return self._derive(dims, bindings, self._dtype)

    def __getitem__(self, key: Any) -> Tensor:
        """Slice this level: ints, slices (negative and stepped), ``None`` and ``...``."""
        bindings = dict(self._bindings)
        dims = index_level(self._source.name, self._dims, key, bindings)
        return self._derive(dims, bindings, self._dtype)

    def one_element_per_program(self) -> Tensor:
        """This single-level tensor as the grid over a tile of one element.

        An arrangement may hand a parameter to the application untiled
        (``return x, y``, or ``x[1:]``): then each program gets one element,
        the launch grid being the tensor's shape.  The result has this level's
        dimensions as its outermost level and a zero-dimensional level below.
        """
        if self.is_hierarchical():
            raise MetaOperationError(
                f"{self._source.name} is already tiled; only a single-level tensor is one "
                "element per program"
            )
        element = self._derive((), dict(self._bindings), self._dtype)
        grid = self._derive(self._dims, dict(self._bindings), element)
        grid._requirements = self.all_requirements()
        return grid
