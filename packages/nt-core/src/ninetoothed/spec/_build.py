"""Building a :class:`~ninetoothed.spec.kernel_spec.KernelSpec` from an arrangement's results.

:func:`build_spec` pairs the application's parameters with the tensors given
and the tensors the arrangement returned (as upstream pairs them), aligns
and checks their outermost levels (:mod:`~ninetoothed.spec._grid`), sorts
the symbols they use into meta, constexpr and run-time ones, and refuses an
application that reads a name nothing defines (:mod:`~ninetoothed.spec._names`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ninetoothed.arrangement.mapping import VARIABLE_PREFIX
from ninetoothed.arrangement.symbol import Symbol, names_of
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.errors import ArrangementError
from ninetoothed.spec._flow import flow_groups
from ninetoothed.spec._grid import align_outermost_ranks, check_outermost_shapes
from ninetoothed.spec._names import check_names_defined
from ninetoothed.spec._usage import source_only_parameters, whole_indexed_parameters
from ninetoothed.spec.kernel_spec import KernelSpec
from ninetoothed.spec.parameter import Parameter

__all__ = ["application_parameters", "build_spec", "kernel_name"]


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
    gridded = [p.name for p in parameters if not p.is_scalar and p.name not in apart]
    flow = flow_groups(
        application,
        [p.name for p in parameters if not p.is_scalar],
        gridded[0] if gridded else None,
    )
    beside = _beside_grid(gridded, flow)
    grid = check_outermost_shapes(parameters, apart | beside)
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
    kernel = kernel_name(name, application)
    check_names_defined(application, symbols.keys() | size_and_stride_names)
    return KernelSpec(
        name=kernel,
        parameters=tuple(parameters),
        application=application,
        grid=grid,
        meta_symbols=meta,
        constexpr_symbols=constexpr,
        runtime_symbols=runtime,
        options=dict(options or {}),
        whole_indexed=frozenset(whole),
        flow=flow if len(flow) > 1 else (),
        beside_grid=beside,
    )


def _beside_grid(gridded: list[str], flow: tuple[frozenset[str], ...]) -> frozenset[str]:
    """The ``gridded`` tensor parameters in another :func:`flow_groups` group than the
    first one's (whose outermost shape is the grid)."""
    if len(flow) < 2 or not gridded:
        return frozenset()
    first = next(group for group in flow if gridded[0] in group)
    return frozenset(name for name in gridded if name not in first)


def kernel_name(name: str | None, application: Callable[..., Any]) -> str:
    """The kernel's name: ``make``'s ``name=``, else the application function's."""
    return name or str(getattr(application, "__name__", "kernel"))


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
    # Which parameter each given tensor is for: an unnamed tensor's own name is a
    # generated one (``ninetoothed_tensor_7``), which tells the user nothing.
    given_for = {id(source): name for name, source in zip(names, sources)}
    for parameter_name, source, result in zip(names, sources, arranged):
        if not isinstance(result, Tensor):
            raise ArrangementError(
                f"the arrangement returned {type(result).__name__} {result!r} for parameter "
                f"{parameter_name!r}; it must return one Tensor per parameter"
            )
        if result.source is not source:
            origin = given_for.get(id(result.source))
            derived = (
                f"the tensor given for {origin!r} ({result.source.name})"
                if origin is not None
                else f"a tensor not given to make ({result.source.name})"
            )
            raise ArrangementError(
                f"the arrangement's result for {parameter_name!r} is derived from {derived}, "
                f"not from the tensor given for it ({source.name})"
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
