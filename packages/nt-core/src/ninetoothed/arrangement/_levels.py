"""What a symbolic tensor records, level by level, and how to read it.

:class:`TensorLevels` is the part of :class:`~ninetoothed.arrangement.tensor.Tensor`
that holds no operation: the dimensions of one level (an index variable and
a size each), the next level or the element type (``dtype``), the bindings
and run-time requirements that relate the level to its source tensor, and
the source's name and strides.  The meta-operations
(:mod:`ninetoothed.arrangement.tensor`) derive new levels from it; the
reference semantics and upstream's ``eval`` read it without needing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ninetoothed.arrangement._checks import as_sequence, check_length, check_size, normalize_index
from ninetoothed.arrangement.mapping import Binding, Dim, Requirement, unite
from ninetoothed.arrangement.symbol import SymbolLike
from ninetoothed.errors import MetaOperationError

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["TensorLevels"]


class TensorLevels:
    """One level of a symbolic tensor and the levels below it (see the module docstring).

    :class:`~ninetoothed.arrangement.tensor.Tensor` is its one subclass: a
    tensor is made by ``Tensor(...)`` or derived by a meta-operation, never
    made from this class.
    """

    name: str
    """The source tensor's name (``Tensor(name=...)``, or a generated one)."""
    other: float | int | None
    """What masked loads read outside the source."""
    constexpr: bool
    """A compile-time scalar (``Tensor(0, constexpr=True)``)."""
    value: Any
    """A scalar's value fixed at ``make`` time, or ``None``."""
    source_variables: tuple[str, ...]
    """The index variables of the source tensor's dimensions."""
    _strides: tuple[SymbolLike, ...]
    _dims: tuple[Dim, ...]
    _dtype: Any
    _bindings: dict[str, Binding]
    _requirements: dict[str, Requirement]
    _source: Self
    _jagged_dim: int | None

    def size_string(self, dim: int) -> str:
        """The name of the size symbol of source dimension ``dim``."""
        return f"{self.name}_size_{dim}"

    def stride_string(self, dim: int) -> str:
        """The name of the stride symbol of source dimension ``dim``."""
        return f"{self.name}_stride_{dim}"

    # ------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple[SymbolLike, ...]:
        """The sizes of this level's dimensions."""
        return tuple(dim.size for dim in self._dims)

    @shape.setter
    def shape(self, sizes: Sequence[SymbolLike]) -> None:
        """Replace this level's sizes, as upstream allows, and nothing else.

        The grid (outermost level), the tile's extent (innermost) and the
        range of each index follow the new sizes, while the bindings to the
        source stay: ``t = x.tile((8,)); t.dtype.shape = (4,)`` reads the
        first 4 elements of every 8.  On a source tensor (before arranging
        it) it declares the sizes, as ``Tensor(shape=...)`` does (upstream's ntops
        writes ``output.shape = input.shape + (num_classes,)``); calls must
        pass arguments of those sizes.
        """
        sizes = as_sequence(sizes, "shape", "sizes")
        self._check_length(sizes, "shape", "sizes")
        for index, size in enumerate(sizes):
            check_size(size, "shape", index)
        self._dims = tuple(Dim(dim.variable, size) for dim, size in zip(self._dims, sizes))

    def size(self, dim: int | None = None) -> Any:
        """Upstream's ``size``: this level's shape, or the size of dimension ``dim``."""
        if dim is None:
            return self.shape
        return self.shape[self._normalize_index(dim, "size")]

    @property
    def jagged_dim(self) -> int | None:
        """The source's jagged dimension (``Tensor(jagged_dim=...)``), or ``None``."""
        return self._source._jagged_dim

    @property
    def ndim(self) -> int:
        """The number of dimensions of this level."""
        return len(self._dims)

    @property
    def dims(self) -> tuple[Dim, ...]:
        """This level's dimensions (index variable and size)."""
        return self._dims

    @property
    def strides(self) -> tuple[SymbolLike, ...]:
        """The strides (in elements) of the source tensor this level comes from.

        Only a source tensor has strides of its own; a tile's elements are
        spread over the source by the arrangement, so asking an arranged level
        for strides is an error.
        """
        if self._source is not self:
            raise AttributeError(
                f"an arranged level of {self.source.name} has no strides of its own; "
                f"use .source.strides for the source tensor's"
            )
        return self._strides

    @property
    def source(self) -> Self:
        """The tensor the chain of meta-operations started from."""
        return self._source

    @property
    def dtype(self) -> Any:
        """The element type, or the tensor of the next level for a hierarchy."""
        return self._dtype

    @dtype.setter
    def dtype(self, value: Any) -> None:
        if isinstance(value, TensorLevels):
            if value._source is not self._source:
                raise MetaOperationError(
                    f"the dtype of a level of {self._source.name} must be derived from the same "
                    f"source tensor, got a tensor derived from {value._source.name}"
                )
            self._bindings = unite(self._bindings, value.all_bindings())
            self._requirements = {**self._requirements, **value.all_requirements()}
        self._dtype = value

    def is_hierarchical(self) -> bool:
        """Whether this tensor has a deeper level."""
        return isinstance(self._dtype, TensorLevels)

    def levels(self) -> list[Self]:
        """This level and every deeper one, outermost first."""
        result = [self]
        while result[-1].is_hierarchical():
            result.append(result[-1]._dtype)
        return result

    def innermost(self) -> Self:
        """The deepest level."""
        return self.levels()[-1]

    def element_dtype(self) -> Any:
        """The element type at the bottom of the hierarchy."""
        return self.innermost()._dtype

    def all_bindings(self) -> dict[str, Binding]:
        """The bindings of this level and of every deeper one, united."""
        bindings: dict[str, Binding] = {}
        for level in self.levels():
            bindings = unite(bindings, level._bindings)
        return bindings

    def all_requirements(self) -> dict[str, Requirement]:
        """Run-time requirements of this level and every deeper one."""
        requirements: dict[str, Requirement] = {}
        for level in self.levels():
            requirements.update(level._requirements)
        return requirements

    def __repr__(self) -> str:
        shape = ", ".join(str(size) for size in self.shape)
        inner = f", dtype={self._dtype!r}" if self._dtype is not None else ""
        return f"Tensor({self._source.name}: shape=({shape}){inner})"

    # --------------------------------------------------------------- helpers
    def _derive(self, dims: tuple[Dim, ...], bindings: dict[str, Binding], dtype: Any) -> Self:
        """A new level of the same source: ``dims`` over ``bindings``, of element ``dtype``."""
        tensor = object.__new__(type(self))
        tensor.name = self.name
        tensor._strides = self._strides
        tensor._dims = dims
        tensor._dtype = dtype
        tensor._bindings = bindings
        tensor._requirements = dict(self._requirements)
        tensor._source = self._source
        tensor.other = self.other
        tensor.constexpr = self.constexpr
        tensor.value = self.value
        tensor.source_variables = self._source.source_variables
        return tensor

    def _check_length(self, values: Sequence[Any], operation: str, parameter: str) -> None:
        check_length(values, operation, parameter, self._source.name, self.shape)

    def _normalize_index(self, dim: Any, operation: str) -> int:
        return normalize_index(dim, self.ndim, operation, self._source.name)
