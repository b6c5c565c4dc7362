"""Whole-dimension tiles of run-time sizes: the padded sizes a library compiles for.

A tile as large as a dimension whose size is known only at the call
(``x.tile((1, -1))`` of a ``Tensor(2)``; in a C library every size is a
run-time size) is padded to the next power of two of the size, a constant
of the compiled kernel.  A just-in-time call compiles the kernel for its
own padded size; a library holds one compiled set per value it may take:

* a variant that gives representative sizes (:attr:`ninetoothed.aot.BuildVariant.sizes`)
  is compiled for the padded sizes those imply, and serves the calls whose
  sizes imply the same (``ninetoothed.build``'s dispatcher tries its other
  variants for the rest);
* otherwise, every power of two from the padded size of the dimension's
  ``lower_bound`` (default 1) up to that of its ``upper_bound``
  (``shape_options={"upper_bound": 4096}``); dimensions of the same bounds
  take the same power of two (an application combines the tiles of one row
  length), others every combination (at most :data:`MAX_COMBINATIONS`).

The launcher computes the call's padded sizes as the host does and launches
a specialisation compiled for them; a call none was compiled for is refused
(``NINETOOTHED_ERROR_NO_VARIANT``, naming what was built).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from typing import Any

from ninetoothed.arrangement.symbol import Symbol, evaluate, next_power_of_two
from ninetoothed.errors import CodegenError
from nt_triton.description import KernelDescription, KernelParameter, ParameterKind, size_name

__all__ = ["MAX_COMBINATIONS", "combinations", "run_time_padded"]

MAX_COMBINATIONS = 64
"""The most combinations of padded sizes one kernel of a library is compiled for."""


def run_time_padded(
    description: KernelDescription, known: Collection[str] = ()
) -> tuple[KernelParameter, ...]:
    """The host-padded sizes whose values depend on the call's sizes (not only on the
    ``known`` names: constexprs the library compiles in)."""
    return tuple(
        p
        for p in description.signature.of_kind(ParameterKind.PADDED_SIZE)
        if isinstance(p.expression, Symbol) and not set(p.expression.names()) <= set(known)
    )


def _bounds(description: KernelDescription) -> dict[str, tuple[int, int | None]]:
    """Each size's lower and upper bound, by its kernel name (None: unbounded)."""
    bounds: dict[str, tuple[int, int | None]] = {}
    for parameter in description.spec.tensor_parameters:
        for dim, size in enumerate(parameter.source.shape):
            if isinstance(size, int):
                bounds[size_name(parameter.name, dim)] = (size, size)
            else:
                lower = getattr(size, "lower_bound", None) or 0
                bounds[size_name(parameter.name, dim)] = (lower, size.upper_bound)
    return bounds


def combinations(
    description: KernelDescription, sizes: Mapping[str, int], known: Collection[str] = ()
) -> list[dict[str, int]]:
    """The values of the run-time padded sizes to compile for, one dict per combination
    (``[{}]`` for a kernel without any); ``sizes``: representative sizes by kernel name;
    ``known``: the constexprs compiled in."""
    padded = run_time_padded(description, known)
    if not padded:
        return [{}]
    groups: dict[str, list[KernelParameter]] = {}
    for parameter in padded:
        groups.setdefault(str(parameter.expression), []).append(parameter)
    # Dimensions of the same bounds take the same power of two: tiles of one row
    # length, as the application combines them (its tiles must have one shape).
    classes: dict[tuple[int, ...], list[KernelParameter]] = {}
    for members in groups.values():
        classes.setdefault(tuple(_values(description, members[0], sizes)), []).extend(members)
    count = 1
    for values in classes:
        count *= len(values)
    if count > MAX_COMBINATIONS:
        shown = ", ".join(f"{len(values)} values" for values in classes)
        raise CodegenError(
            f"{description.spec.name}: its tiles as large as a dimension are padded per call "
            f"({shown}): {count} combinations to compile, more than {MAX_COMBINATIONS}; "
            "lower the dimensions' upper_bound (shape_options={'upper_bound': ...}), give them "
            "literal sizes, or build variants for the sizes you need"
        )
    result: list[dict[str, int]] = []
    for chosen in itertools.product(*classes):
        combination: dict[str, int] = {}
        for members, value in zip(classes.values(), chosen):
            combination.update((member.name, value) for member in members)
        result.append(combination)
    return result


def _values(
    description: KernelDescription, parameter: KernelParameter, sizes: Mapping[str, int]
) -> list[int]:
    """The padded values ``parameter`` is compiled for."""
    expression: Any = parameter.expression
    names = set(expression.names()) if isinstance(expression, Symbol) else set()
    if names <= sizes.keys():
        return [next_power_of_two(int(evaluate(expression, dict(sizes))))]
    bounds = _bounds(description)
    unbounded = sorted(name for name in names if bounds.get(name, (0, None))[1] is None)
    if unbounded:
        raise CodegenError(
            f"{description.spec.name}: a tile as large as a dimension of run-time size "
            f"({', '.join(unbounded)}) is padded per call to a power of two, a constant of the "
            "compiled kernel; a C library compiles one kernel per power of two up to the "
            "dimension's bound: give it one (Tensor(..., shape_options={'upper_bound': 4096})), "
            "or a literal size (Tensor(shape=(None, 1024)))"
        )
    smallest = next_power_of_two(int(evaluate(expression, {n: bounds[n][0] for n in names})))
    largest = next_power_of_two(
        int(evaluate(expression, {n: int(bounds[n][1] or 0) for n in names}))
    )
    return [1 << shift for shift in range(smallest.bit_length() - 1, largest.bit_length())]
