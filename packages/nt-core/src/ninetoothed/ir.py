"""The kernel IR: what ``make`` hands to a code-generation backend.

A :class:`KernelSpec` is the arranged parameters plus the application,
validated: the outermost levels agree (they are the launch grid), every
symbol is classified (meta, constexpr, run-time), and the application's
parameters line up with the tensors.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ninetoothed.agreement import Agreement
from ninetoothed.agreement import derive as derive_agreements
from ninetoothed.dtype import DataType
from ninetoothed.errors import ArrangementError
from ninetoothed.guards import Conditional, conditional_parameters
from ninetoothed.jagged import offset_groups
from ninetoothed.mapping import VARIABLE_PREFIX
from ninetoothed.pairing import paired_with_grid
from ninetoothed.symbol import Symbol, SymbolLike, names_of
from ninetoothed.tensor import Tensor
from ninetoothed.usage import gathered_parameters, source_only_parameters, whole_indexed_parameters


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter: its name in the application, source and arrangement."""

    name: str
    source: Tensor
    arranged: Tensor

    @property
    def is_scalar(self) -> bool:
        """Whether this is a scalar (``Tensor(0)``) parameter."""
        # A Tensor(0) given dimensions by its arrangement (``unsqueeze``) takes a
        # zero-dimensional framework tensor, as upstream's argmin's output does.
        return self.source.ndim == 0 and self.arranged.ndim == 0


@dataclass(frozen=True)
class ParameterCheck:
    """What a call must satisfy for one parameter, derived once per kernel."""

    name: str
    is_scalar: bool
    ndim: int
    fixed_sizes: tuple[tuple[int, int], ...]
    """``(dimension, size)`` for the sizes the tensor declares as literals."""
    dtype: str | None
    """The declared element type's name, if any."""
    fixed_value: Any
    """A scalar's value fixed at ``make`` time (``Tensor(0, value=...)``), else None."""
    jagged_dim: int | None = None
    """The jagged dimension (``Tensor(jagged_dim=...)``: a torch nested tensor), else None."""
    constexpr: bool = False
    """A constexpr scalar (``Tensor(0, constexpr=True)``): its value is compiled in."""


@dataclass(frozen=True)
class KernelSpec:
    """A validated arrange-and-apply pair, ready for code generation."""

    name: str
    parameters: tuple[Parameter, ...]
    application: Callable[..., Any]
    grid: tuple[SymbolLike, ...]
    """The outermost shape shared by the arranged tensors: one program per element."""

    meta_symbols: dict[str, Symbol]
    """Chosen by auto-tuning."""

    constexpr_symbols: dict[str, Symbol]
    """Given by the caller (after the tensors, positionally or by keyword); compile-time
    in the kernel."""

    runtime_symbols: dict[str, Symbol]
    """Given by the caller by keyword (beyond sizes and strides); run-time values."""

    options: Mapping[str, Any] = field(default_factory=dict)
    """Backend options from ``make`` (``num_warps``, ``num_stages``, ``configs`` …)."""

    whole_indexed: frozenset[str] = frozenset()
    """Parameters the arrangement returned unchanged and the application reads and
    writes only element by element with one index per dimension (``x[i, j]``): as
    upstream, each such subscript is an element of the whole tensor, ``x.source[i, j]``
    (:func:`~ninetoothed.usage.whole_indexed_parameters`)."""

    positional_symbols: tuple[str, ...] = field(init=False)
    """The constexpr symbols a call may give positionally, after the parameters.

    Upstream's launch function takes them in this order: sorted by name,
    leaving out any named like a parameter's tensor (that name is the
    tensor's)."""

    argument_names: tuple[str, ...] = field(init=False)
    """Upstream's launch signature: each parameter's tensor name, then the
    :attr:`positional_symbols`.  A call may give any of them by keyword (a
    tensor by its ``Tensor(name=...)``) or positionally, in this order."""

    def __post_init__(self) -> None:
        # Adapters read this on every call, also while torch.compile traces one; on
        # Python 3.11 Dynamo cannot enter the lock of a cached_property's first
        # computation, so it is computed here, outside any trace.
        self.jagged_parameters  # noqa: B018
        self.conditional  # noqa: B018
        # Fields, not cached properties: Kernel.__call__ reads them on every call,
        # also while Paddle's SOT simulates one, which sees only a dataclass's fields.
        sources = {p.source.name for p in self.parameters}
        positional = tuple(sorted(n for n in self.constexpr_symbols if n not in sources))
        object.__setattr__(self, "positional_symbols", positional)
        names = tuple(p.source.name for p in self.parameters) + positional
        object.__setattr__(self, "argument_names", names)

    @cached_property
    def call_checks(self) -> tuple[ParameterCheck, ...]:
        """Per parameter, what each call is checked against (computed once)."""
        checks = []
        for parameter in self.parameters:
            source = parameter.source
            declared = source.dtype
            checks.append(
                ParameterCheck(
                    name=parameter.name,
                    is_scalar=parameter.is_scalar,
                    ndim=source.ndim,
                    fixed_sizes=tuple(
                        (dim, size)
                        for dim, size in enumerate(source.shape)
                        if isinstance(size, int)
                    ),
                    dtype=declared.name if isinstance(declared, DataType) else None,
                    fixed_value=source.value,
                    jagged_dim=source.jagged_dim,
                    constexpr=parameter.is_scalar and source.constexpr,
                )
            )
        return tuple(checks)

    @cached_property
    def gathered(self) -> frozenset[str]:
        """Tensor parameters the application reaches elsewhere than their arrangement
        says (:func:`~ninetoothed.usage.gathered_parameters`; computed once)."""
        levels = {p.name: len(p.arranged.levels()) for p in self.tensor_parameters}
        return gathered_parameters(self.application, levels, self.whole_indexed)

    @cached_property
    def agreements(self) -> tuple[Agreement, ...]:
        """Source sizes of different tensor parameters that must be equal (computed once)."""
        tensors = self.tensor_parameters
        # A gathered parameter's arrangement ties no size (its grid is still checked
        # at launch).
        return derive_agreements(
            [p.arranged for p in tensors],
            skip={i for i, p in enumerate(tensors) if p.name in self.gathered},
        )

    @cached_property
    def conditional(self) -> tuple[Conditional, ...]:
        """Tensor parameters only constexpr-guarded code touches (see :mod:`ninetoothed.guards`)."""
        return conditional_parameters(self)

    def unused_parameters(self, values: Mapping[str, Any]) -> frozenset[int]:
        """Indices (among :attr:`tensor_parameters`) of the parameters no code runs on
        for a call with these constexpr ``values`` (by parameter or symbol name)."""
        return frozenset(c.index for c in self.conditional if not c.used(values))

    @cached_property
    def tile_symbols(self) -> frozenset[str]:
        """Symbols the caller gives that are tile sizes (a level's size below the grid)."""
        given = self.constexpr_symbols.keys() | self.runtime_symbols.keys()
        return frozenset(
            str(size)
            for parameter in self.tensor_parameters
            for level in parameter.arranged.levels()[1:]
            for size in level.shape
            if isinstance(size, Symbol) and str(size) in given
        )

    @cached_property
    def symbol_kinds(self) -> dict[str, str]:
        """``"meta"``, ``"constexpr"`` or ``"runtime"`` for each symbol a call may give."""
        return {
            **{name: "meta" for name in self.meta_symbols},
            **{name: "constexpr" for name in self.constexpr_symbols},
            **{name: "runtime" for name in self.runtime_symbols},
        }

    @cached_property
    def required_symbols(self) -> frozenset[str]:
        """Symbols every call must give (constexpr and run-time ones), by keyword once
        :func:`~ninetoothed.binding.canonical_call` has put the call in the adapters' form."""
        return frozenset(self.constexpr_symbols) | frozenset(self.runtime_symbols)

    @cached_property
    def jagged_parameters(self) -> tuple[int, ...]:
        """Indices (among :attr:`tensor_parameters`) of the jagged parameters (computed once)."""
        return tuple(
            index
            for index, parameter in enumerate(self.tensor_parameters)
            if parameter.source.jagged_dim is not None
        )

    @cached_property
    def jagged_groups(self) -> tuple[tuple[str, ...], ...]:
        """The jagged parameters, by name, grouped by the offsets they must share in a
        call (:func:`ninetoothed.jagged.offset_groups`; computed once)."""
        return offset_groups(self.tensor_parameters, self.grid, self.agreements)

    @property
    def tensor_parameters(self) -> tuple[Parameter, ...]:
        """The parameters that are tensors (not scalars)."""
        return tuple(p for p in self.parameters if not p.is_scalar)

    @property
    def scalar_parameters(self) -> tuple[Parameter, ...]:
        """The scalar (``Tensor(0)``) parameters."""
        return tuple(p for p in self.parameters if p.is_scalar)


def build_spec(
    application: Callable[..., Any],
    sources: tuple[Tensor, ...],
    arranged: tuple[Tensor, ...],
    *,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> KernelSpec:
    """Validate an arrangement's result and collect everything codegen needs."""
    whole = whole_indexed_parameters(application, arranged)
    parameters = _parameters(application, sources, arranged)
    # A tensor reached only through its source never meets the grid (the launch
    # check skips it too): its outermost shape neither shapes nor joins the grid.
    # A jagged one does: each program finds its batch entry through the grid.
    apart = whole | source_only_parameters(
        application, [p.name for p in parameters if p.source.jagged_dim is None]
    )
    parameters = align_outermost_ranks(parameters, apart)
    grid = check_outermost_shapes(parameters, apart)
    symbols = _symbols(parameters)
    size_and_stride_names = {
        name
        for p in parameters
        for dim in range(p.source.ndim)
        for name in (p.source.size_string(dim), p.source.stride_string(dim))
    }
    meta = {n: s for n, s in symbols.items() if s.meta}
    constexpr = {n: s for n, s in symbols.items() if s.constexpr and n not in size_and_stride_names}
    runtime = {
        n: s
        for n, s in symbols.items()
        if not (s.meta or s.constexpr) and n not in size_and_stride_names
    }
    return KernelSpec(
        name=name or str(getattr(application, "__name__", "kernel")),
        parameters=tuple(parameters),
        application=application,
        grid=grid,
        meta_symbols=meta,
        constexpr_symbols=constexpr,
        runtime_symbols=runtime,
        options=dict(options or {}),
        whole_indexed=frozenset(whole),
    )


def _parameters(
    application: Callable[..., Any], sources: tuple[Tensor, ...], arranged: tuple[Tensor, ...]
) -> list[Parameter]:
    """The application's parameters paired with their source and arranged tensors."""
    names = application_parameters(application)
    beyond = arranged[len(names) :]
    if beyond and not any(isinstance(result, Tensor) for result in beyond):
        # Upstream pairs parameters with results and ignores any beyond them
        # (ntops's bucketize returns its padded length too): drop non-tensors there.
        arranged = arranged[: len(names)]
    if len(arranged) < len(sources) and len(arranged) == len(names):
        # Upstream pairs the application's parameters with the arrangement's
        # results, so an arrangement may leave given tensors out (ntops's
        # attention drops its KV-cache tensors): keep those it returned.
        sources = _returned_sources(sources, arranged, names)
    if len(names) != len(sources):
        raise ArrangementError(
            f"the application {application.__name__} takes {len(names)} parameters "
            f"({', '.join(names)}), but {len(sources)} tensors were given"
        )
    if len(arranged) != len(sources):
        raise ArrangementError(
            f"the arrangement returned {len(arranged)} tensors for {len(sources)} parameters"
        )
    parameters = []
    for parameter_name, source, result in zip(names, sources, arranged):
        if not isinstance(result, Tensor):
            raise ArrangementError(
                f"the arrangement returned {type(result).__name__} {result!r} for parameter "
                f"{parameter_name!r}; it must return one Tensor per parameter"
            )
        if result.source is not source:
            raise ArrangementError(
                f"the arrangement's result for {parameter_name!r} is derived from "
                f"{result.source.name}, not from the tensor given for it ({source.name})"
            )
        if source.ndim and not result.is_hierarchical():
            # Untiled (``return x, y`` or ``x[1:]``): one element per program.
            result = result.one_element_per_program()
        parameters.append(Parameter(parameter_name, source, result))
    return parameters


def _returned_sources(
    sources: tuple[Tensor, ...], arranged: tuple[Tensor, ...], names: list[str]
) -> tuple[Tensor, ...]:
    """The given tensors the arrangement returned, checked to keep their order.

    Each result must come from a distinct given tensor, in the order they
    were given, so that the call's arguments (in parameter order) are the
    tensors the arrangement saw.
    """
    remaining = list(sources)
    kept: list[Tensor] = []
    for parameter_name, result in zip(names, arranged):
        source = result.source if isinstance(result, Tensor) else None
        while remaining and remaining[0] is not source:
            remaining.pop(0)
        if not remaining:
            given = ", ".join(tensor.name for tensor in sources)
            raise ArrangementError(
                f"the arrangement returned {len(arranged)} tensors for {len(sources)} given "
                f"({given}); the result for {parameter_name!r} must be derived from one of "
                "them, each once and in the order given"
            )
        kept.append(remaining.pop(0))
    return tuple(kept)


def _symbols(parameters: list[Parameter]) -> dict[str, Symbol]:
    """Every named symbol the arranged parameters use (index variables excluded)."""
    symbols: dict[str, Symbol] = {}
    for parameter in parameters:
        for level in parameter.arranged.levels():
            symbols.update(names_of(level.shape))
        for binding in parameter.arranged.all_bindings().values():
            symbols.update(names_of(binding.expression))
            symbols.update(names_of(binding.bound))
    symbols = {
        symbol_name: symbol
        for symbol_name, symbol in symbols.items()
        if not symbol_name.startswith(VARIABLE_PREFIX)
    }
    for parameter in parameters:
        source = parameter.source
        for dim, size in enumerate(source.shape):
            if isinstance(size, Symbol) and size.name == source.size_string(dim):
                symbols.setdefault(size.name, size)
    return symbols


def application_parameters(application: Callable[..., Any]) -> list[str]:
    """The names of the application's positional parameters."""
    signature = inspect.signature(application)
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


def _gridded(parameters: list[Parameter], apart: Collection[str]) -> list[Parameter]:
    """The tensor parameters whose outermost levels make the grid: all but those
    in ``apart`` (reached only through their source); if that leaves none, the
    first tensor's, as upstream's grid always is."""
    tensors = [p for p in parameters if not p.is_scalar]
    return [p for p in tensors if p.name not in apart] or tensors[:1]


def align_outermost_ranks(
    parameters: list[Parameter], apart: Collection[str] = ()
) -> list[Parameter]:
    """Give every tensor's outermost level the first's rank, where literal 1s differ.

    Upstream unravels the program id over each tensor's own outermost shape,
    so outermost shapes that differ only in dimensions of literal size 1
    (ntops's instance_norm: ``(N, C, 1)`` for the input, ``(N, C)`` for the
    weight) address the same tiles.  Such a level is rearranged to the first
    tensor's shape (squeezing its 1s, inserting the first's), which keeps
    that addressing; other differences in rank get upstream's pairing of
    tiles program by program (:func:`~ninetoothed.pairing.paired_with_grid`,
    checked at launch), and what still differs is left for
    :func:`check_outermost_shapes` to report.  Parameters in ``apart`` are
    left as they are (see :func:`_gridded`).
    """
    tensors = _gridded(parameters, apart)
    if not tensors:
        return parameters
    reference = tensors[0].arranged.shape
    aligned = []
    for parameter in parameters:
        shape = parameter.arranged.shape
        if parameter not in tensors or len(shape) == len(reference):
            aligned.append(parameter)
            continue
        ones = tuple(dim for dim, size in enumerate(shape) if _is_one(size))
        reference_ones = [dim for dim, size in enumerate(reference) if _is_one(size)]
        if len(shape) - len(ones) == len(reference) - len(reference_ones):
            result = parameter.arranged.squeeze(ones) if ones else parameter.arranged
            for dim in reference_ones:
                result = result.unsqueeze(dim)
        else:
            result = paired_with_grid(parameter.name, parameter.arranged, reference)
        aligned.append(Parameter(parameter.name, parameter.source, result))
    return aligned


def _is_one(size: SymbolLike) -> bool:
    return isinstance(size, int) and size == 1


def check_outermost_shapes(
    parameters: list[Parameter], apart: Collection[str] = ()
) -> tuple[SymbolLike, ...]:
    """The shared outermost shape, or an :class:`ArrangementError` naming each shape.

    Sizes that differ in form (``input_size_0`` and ``output_size_0``) may
    still agree at run time: the launcher checks them on concrete sizes.  See
    :func:`_may_agree` for what is rejected at ``make`` time.  Parameters in
    ``apart`` take no part (see :func:`_gridded`).
    """
    tensors = _gridded(parameters, apart)
    if not tensors:
        return ()
    shapes = [p.arranged.shape for p in tensors]
    reference = shapes[0]
    for shape in shapes[1:]:
        if (
            len(shape) != len(reference)
            or not all(_may_agree(a, b) for a, b in zip(shape, reference))
            or _crossed_ones(shapes)
        ):
            listing = "; ".join(f"{p.name}: {_format_shape(p.arranged.shape)}" for p in tensors)
            raise ArrangementError(
                "the outermost levels of the arranged tensors must have the same shape (it is "
                f"the launch grid), got {listing}"
            )
    # Prefer literal sizes when some tensor has them: they are known at compile time.
    grid = list(reference)
    for shape in shapes:
        for dim, size in enumerate(shape):
            if isinstance(size, int):
                grid[dim] = size
    return tuple(grid)


def _may_agree(left: SymbolLike, right: SymbolLike) -> bool:
    """Whether two outermost sizes can be equal at run time.

    Two literals must be equal; a literal may equal a symbolic size, checked
    at launch (a literal 1 against a symbolic size too: upstream's argmin
    tiles a whole row, ``(row_blocks,)`` against its output's ``(1,)``).
    """
    if isinstance(left, int) and isinstance(right, int):
        return left == right
    return True


def _crossed_ones(shapes: list[tuple[SymbolLike, ...]]) -> bool:
    """Whether two shapes each have a literal 1 where the other has a tuned size.

    That is the classic incomplete arrangement (rows and columns of tiles
    not yet expanded across the grid, as in the tutorial's matmul before
    ``expand``): refused at ``make``.  Only a size that mentions a meta symbol
    counts: a number of blocks the tuner chooses cannot be required to be 1.
    A size of the arguments alone (upstream programs tile a dimension by the
    size it must have, ``(N, 1)`` against ``(1, C // 2)``) is checked at launch,
    as a one-sided 1 is.
    """

    def tuned(size: SymbolLike) -> bool:
        return isinstance(size, Symbol) and any(s.meta for s in size.free_symbols.values())

    def ones_against_symbols(a: tuple[SymbolLike, ...], b: tuple[SymbolLike, ...]) -> bool:
        return any(_is_one(x) and tuned(y) for x, y in zip(a, b))

    return any(
        ones_against_symbols(a, b) and ones_against_symbols(b, a)
        for index, a in enumerate(shapes)
        for b in shapes[index + 1 :]
        if len(a) == len(b)
    )


def _format_shape(shape: tuple[SymbolLike, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
