"""The kernel spec: what ``make`` hands to a code-generation backend.

A :class:`KernelSpec` is the arranged parameters plus the application,
validated (:func:`ninetoothed.spec._build.build_spec` makes it): the
outermost levels agree (they are the launch grid), every symbol is
classified (meta, constexpr, run-time), and the application's parameters
line up with the tensors.  What else the backend and the adapters need
(agreements, parameters a call may leave unused, jagged groups) is derived
here once per kernel, from the analyses beside this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ninetoothed.arrangement.dtype import DataType
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import kernel_label
from ninetoothed.spec._agreement import Agreement, shared_sources
from ninetoothed.spec._agreement import derive as derive_agreements
from ninetoothed.spec._guards import Conditional, conditional_parameters
from ninetoothed.spec._jagged_groups import offset_groups
from ninetoothed.spec._usage import gathered_parameters
from ninetoothed.spec.parameter import Parameter, ParameterCheck

__all__ = ["KernelSpec"]


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
    (:func:`~ninetoothed.spec._usage.whole_indexed_parameters`)."""

    flow: tuple[frozenset[str], ...] = ()
    """The tensor parameters in groups no value crosses
    (:func:`~ninetoothed.spec._flow.flow_groups`); empty: one group."""

    beside_grid: frozenset[str] = frozenset()
    """Tensor parameters whose values never meet the grid's first tensor's (another
    :attr:`flow` group): their outermost shape may be smaller than the grid (the
    programs past their tiles find every element masked), never larger."""

    positional_symbols: tuple[str, ...] = field(init=False)
    """The constexpr symbols a call may give positionally, after the parameters.

    Upstream's launch function takes them in this order: sorted by name,
    leaving out any named like a parameter's tensor (that name is the
    tensor's)."""

    argument_names: tuple[str, ...] = field(init=False)
    """Upstream's launch signature: each parameter's tensor name, then the
    :attr:`positional_symbols`.  A call may give any of them by keyword (a
    tensor by its ``Tensor(name=...)``) or positionally, in this order."""

    label: str = field(init=False)
    """How errors about this kernel begin: its name and where its application is
    defined, ``kernel 'add' (add.py:12)`` (:func:`~ninetoothed.errors.kernel_label`)."""

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
        object.__setattr__(self, "label", kernel_label(self.name, self.application))

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
        says (:func:`~ninetoothed.spec._usage.gathered_parameters`; computed once)."""
        levels = {p.name: len(p.arranged.levels()) for p in self.tensor_parameters}
        return gathered_parameters(self.application, levels, self.whole_indexed)

    @cached_property
    def agreements(self) -> tuple[Agreement, ...]:
        """Source sizes of different tensor parameters that must be equal (computed once)."""
        tensors = self.tensor_parameters
        # A gathered parameter's arrangement ties no size (its grid is still checked
        # at launch).
        derived = derive_agreements(
            [p.arranged for p in tensors],
            skip={i for i, p in enumerate(tensors) if p.name in self.gathered},
        )
        if len(self.flow) > 1:
            # Parameters whose values never meet need not be masked alike.
            group_of = {name: g for g, group in enumerate(self.flow) for name in group}
            derived = tuple(
                within
                for agreement in derived
                for within in agreement.split(lambda i: group_of.get(tensors[i].name, -1))
            )
        return derived + shared_sources([p.source for p in tensors])

    @cached_property
    def conditional(self) -> tuple[Conditional, ...]:
        """Tensor parameters that only constexpr-guarded code touches (see ``_guards``)."""
        return conditional_parameters(
            self.application, self.parameters, self.constexpr_symbols, self.grid
        )

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
        :func:`~ninetoothed.runtime.binding.canonical_call` has put the call in the
        adapters' form."""
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
        call (:func:`~ninetoothed.spec._jagged_groups.offset_groups`; computed once)."""
        return offset_groups(self.tensor_parameters, self.grid, self.agreements)

    @property
    def tensor_parameters(self) -> tuple[Parameter, ...]:
        """The parameters that are tensors (not scalars)."""
        return tuple(p for p in self.parameters if not p.is_scalar)

    @property
    def scalar_parameters(self) -> tuple[Parameter, ...]:
        """The scalar (``Tensor(0)``) parameters."""
        return tuple(p for p in self.parameters if p.is_scalar)
