"""Constexprs a call gives, compiled into a C library for values chosen at build time.

A just-in-time kernel compiles a constexpr symbol
(``Symbol("BLOCK", constexpr=True)``) or a constexpr scalar without a value
(``Tensor(0, constexpr=True)``) for each value a call gives.  A C library
cannot compile at the call, so it holds one variant per value given at
build time, as InfiniCore builds upstream's libraries by looping ``make``
over a grid of values:

* ``make(..., caller="cuda", constexprs={"BLOCK": (64, 128), "causal": (False, True)})``
  compiles every combination behind one launch function;
* ``ninetoothed.build``'s configurations may name them beside ``premake``'s
  parameters (``((), {"dtype": ..., "BLOCK": 64}, {})``).

A symbol's value selects the variant as a key value (an ``int`` parameter
of the launch function, ``<name>_``, after the kernel's parameters, as the
Python callable takes it after the tensors, as a just-in-time call does); a
scalar's is read from its argument.  A call with a value no variant was
built for is refused (``NINETOOTHED_ERROR_NO_VARIANT``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from ninetoothed.aot import BuildVariant, key_value
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["call_constexprs", "checked_grid", "grid_variants", "split_given"]


def call_constexprs(spec: KernelSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The constexpr symbols (in the order a call gives them) and the constexpr scalar
    parameters without a value of ``spec``: what each call gives."""
    symbols = tuple(spec.positional_symbols) + tuple(
        sorted(n for n in spec.constexpr_symbols if n not in spec.positional_symbols)
    )
    scalars = tuple(
        p.name for p in spec.scalar_parameters if p.source.constexpr and p.source.value is None
    )
    return symbols, scalars


def checked_grid(function: str, given: Any) -> dict[str, tuple[Any, ...]]:
    """``constexprs=`` as a name -> values mapping (a single value: one); raises
    :class:`TypeError` naming what is wrong."""
    if given is None:
        return {}
    if not isinstance(given, Mapping) or not all(isinstance(k, str) for k in given):
        raise TypeError(
            f"{function}: constexprs must map each constexpr's name to its values, e.g. "
            f"{{'BLOCK': (64, 128)}}, got {type(given).__name__} {given!r}"
        )
    grid: dict[str, tuple[Any, ...]] = {}
    for name, values in given.items():
        chosen = tuple(values) if isinstance(values, (tuple, list, range)) else (values,)
        if not chosen:
            raise TypeError(f"{function}: constexprs gives {name!r} no value to build for")
        grid[name] = chosen
    return grid


def grid_variants(
    spec: KernelSpec, grid: Mapping[str, tuple[Any, ...]]
) -> tuple[tuple[str, ...], tuple[BuildVariant, ...]]:
    """The key names and one variant per combination of ``grid``'s values (every
    constexpr the call gives has values: :func:`ninetoothed._aot.request.check_spec`)."""
    symbols, scalars = call_constexprs(spec)
    names = [*symbols, *scalars]
    variants = []
    for values in itertools.product(*(grid[name] for name in names)):
        constants = tuple(zip(names, values))
        key = tuple(_key(name, value) for name, value in constants[: len(symbols)])
        label = ", ".join(f"{name}={value!r}" for name, value in constants)
        key_label = ", ".join(f"{name}={value!r}" for name, value in constants[: len(symbols)])
        variants.append(BuildVariant(spec, key, (), label, key_label, constants))
    return tuple(f"{name}_" for name in symbols), tuple(variants)


def _key(name: str, value: Any) -> int:
    try:
        return key_value(value)
    except TypeError as error:
        raise TypeError(
            f"constexprs gives {name}={value!r}, which cannot select a variant at run time "
            f"({error})"
        ) from error


def split_given(
    spec: KernelSpec, values: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``values`` (a build configuration's keyword arguments ``premake`` does not take)
    as the symbols' and the scalars' values; raises :class:`TypeError` for a name that
    is neither."""
    symbols, scalars = call_constexprs(spec)
    unknown = sorted(set(values) - set(symbols) - set(scalars))
    if unknown:
        taken = ", ".join([*symbols, *scalars]) or "none"
        raise TypeError(
            f"names {', '.join(unknown)}, which neither premake nor the kernel it makes takes "
            f"(the kernel's constexprs given at the call: {taken})"
        )
    return (
        {n: values[n] for n in symbols if n in values},
        {n: values[n] for n in scalars if n in values},
    )
