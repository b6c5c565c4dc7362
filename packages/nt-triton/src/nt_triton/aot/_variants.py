"""The specialisations a C library holds of one kernel, and which call each serves.

A just-in-time call compiles the kernel for exactly the call's facts: the
host's constexpr flags (64-bit offsets, layout flags, size alignments) and
Triton's own specialisation of the arguments (pointers aligned to 16 bytes,
ints divisible by 16, ints equal to 1 made constant).  Those alignment facts
are what lets Triton vectorise loads: a row stride not known to be divisible
by 16 makes every load of a tile element-wise.  A C library cannot compile at
call time, so it holds a short chain of specialisations, most specific first,
each with the condition under which it computes exactly what the call needs;
the launcher takes the first whose condition holds (cheap integer tests):

1. ``dense``: 32-bit offsets, layout flags on, tile-aligned sizes, pointers
   aligned to 16 bytes, every tensor's innermost stride 1, every other stride
   and every size divisible by 16 (what a just-in-time call of contiguous
   tensors with sizes like 4096 compiles);
2. the same with sizes of any value (a batch of 4, 12 heads): sizes whose
   tiles are multiples of 16 are still known divisible, as their tile checks
   imply it;
3. ... and sizes that are not multiples of the tiles (masked edges);
4. ... and tensors whose dimensions do not lie as one block (slices);
5. ``general``: any 32-bit call (nothing assumed of pointers or strides: odd
   strides and pointers off 16 bytes come here);
6. ``wide``: 64-bit offsets, nothing assumed: serves every call.

Fields that cannot matter for a kernel (no layout flags, no size alignments,
no pointers) are dropped, and a specialisation compiled exactly as a later
(less demanding) one is dropped, so small kernels hold two or three.  Each is
compiled with the same meta values and launch options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ninetoothed.arrangement.dtype import DataType, triton_type_name
from ninetoothed.arrangement.symbol import Symbol, evaluate, next_power_of_two
from ninetoothed.errors import CodegenError
from nt_triton.aot import _buckets
from nt_triton.description import (
    KernelDescription,
    KernelParameter,
    ParameterKind,
    Specialisation,
    specialisation,
)

__all__ = ["CHAIN", "Fixed", "Plan", "Variant", "compiled_in", "plans", "scalar_types"]


@dataclass(frozen=True)
class Variant:
    """What a specialisation assumes of a call (see the module docstring)."""

    wide: bool
    """64-bit offsets (sizes and strides passed as 64-bit ints)."""
    layout: bool
    """Every layout flag on."""
    tiles: bool
    """Size alignments at their tiles (tile range checks gone)."""
    aligned: bool
    """Every data pointer a multiple of 16 bytes, every stride passed divisible by 16."""
    unit: bool
    """Every tensor's innermost stride (where the kernel takes it) is 1, a constant."""
    divisible: bool
    """Every size passed is divisible by 16."""

    def describe(self) -> str:
        """``"32-bit, layout, tiles, aligned, unit, divisible"``: what messages print."""
        facts = ["64-bit" if self.wide else "32-bit"]
        facts += [
            name
            for name in ("layout", "tiles", "aligned", "unit", "divisible")
            if getattr(self, name)
        ]
        return ", ".join(facts)


CHAIN = (
    Variant(False, True, True, True, True, True),
    Variant(False, True, True, True, True, False),
    Variant(False, True, False, True, True, False),
    Variant(False, False, False, True, True, False),
    Variant(False, False, False, False, False, False),
    Variant(True, False, False, False, False, False),
)


@dataclass(frozen=True)
class Plan:
    """One specialisation of a kernel: how it is compiled and what the launcher passes."""

    variant: Variant
    specialisation: Specialisation
    passed: tuple[KernelParameter, ...]
    """The parameters the compiled kernel takes, in order (constexprs are compiled in)."""
    constants: dict[str, Any]
    """The compiled-in value of every constexpr parameter, by name."""
    padded: dict[str, int] = field(default_factory=dict)
    """The values of the padded sizes that depend on the call's sizes (:mod:`._buckets`):
    the specialisation serves only calls whose sizes pad to these."""
    implied: frozenset[str] = frozenset()
    """The sizes passed that are compiled as divisible by 16 because the variant's tile
    checks imply it (a multiple of a tile of 16 or more): the launcher need not test them."""

    def describe(self) -> str:
        """What messages print: the variant's facts and its padded sizes."""
        padded = "".join(f", {name}={value}" for name, value in self.padded.items())
        return self.variant.describe() + padded


@dataclass(frozen=True)
class Fixed:
    """What one variant of a library fixes of the calls it serves."""

    constants: Mapping[str, Any] = field(default_factory=dict)
    """Values of the constexpr symbols and scalars a call gives, by name, compiled in."""
    sizes: Mapping[str, int] = field(default_factory=dict)
    """Sizes by kernel name: a size declared constexpr is compiled in as it is, a run-time
    one stands for the power of two it pads to."""


def scalar_types(dtype: Any) -> tuple[str, str]:
    """``(Triton type, C type of the host value)`` of a scalar parameter of ``dtype``.

    Floating-point scalars (and undeclared ones) are ``fp32`` in the kernel, as a
    Python float is in a just-in-time call, and a ``double`` in host memory, as
    upstream's libraries read them; integers keep their declared type.
    """
    name = dtype.name if isinstance(dtype, DataType) else "float32"
    types = _SCALARS.get(name)
    if types is None:
        raise CodegenError(f"a scalar of dtype {name} cannot be passed to a C library's kernel")
    return types


_SCALARS = {
    "float16": ("fp32", "double"),
    "bfloat16": ("fp32", "double"),
    "float32": ("fp32", "double"),
    "float64": ("fp32", "double"),
    "bool": ("u1", "uint8_t"),
    "int8": ("i32", "int8_t"),
    "int16": ("i32", "int16_t"),
    "int32": ("i32", "int32_t"),
    "int64": ("i64", "int64_t"),
    "uint8": ("i32", "uint8_t"),
    "uint16": ("i32", "uint16_t"),
    "uint32": ("u32", "uint32_t"),
    "uint64": ("u64", "uint64_t"),
}


def plans(description: KernelDescription, fixed: Fixed | None = None) -> list[Plan]:
    """The kernel's specialisations, most specific first: per combination of padded
    sizes (:mod:`._buckets`), a chain whose last serves every call of those."""
    fixed = fixed or Fixed()
    given = compiled_in(description, fixed)
    result = []
    for padded in _buckets.combinations(description, fixed.sizes, given):
        result += _chain(description, padded, given)
    return result


def compiled_in(description: KernelDescription, fixed: Fixed) -> dict[str, Any]:
    """The values ``fixed`` compiles in: the constexprs the call gives, and the sizes the
    kernel takes as constexprs (the launcher checks a call's against them)."""
    exact = {
        name: size
        for name, size in fixed.sizes.items()
        if (parameter := description.signature.by_name.get(name)) is not None
        and parameter.kind is ParameterKind.SIZE
        and parameter.constexpr
    }
    return {**fixed.constants, **exact}


def _chain(
    description: KernelDescription, padded: dict[str, int], constants: Mapping[str, Any]
) -> list[Plan]:
    """The chain of specialisations for one combination of padded sizes."""
    signature = description.signature
    relevant = {
        "layout": bool(signature.of_kind(ParameterKind.LAYOUT_FLAG)),
        "tiles": any(description.alignment_tiles.values()),
        "aligned": bool(signature.pointers or signature.of_kind(ParameterKind.STRIDE)),
        "unit": bool(_innermost_strides(description)),
        "divisible": bool(signature.of_kind(ParameterKind.SIZE)),
    }
    chain: list[Variant] = []
    for variant in CHAIN:
        variant = replace(variant, **{k: getattr(variant, k) and v for k, v in relevant.items()})
        if variant not in chain:
            chain.append(variant)
    result = [_plan(description, variant, padded, constants) for variant in chain]
    # A specialisation compiled exactly as a later one serves no call the later one does
    # not (conditions only weaken along the chain): the later, cheaper test is kept.
    return [
        plan
        for index, plan in enumerate(result)
        if all(plan.specialisation != later.specialisation for later in result[index + 1 :])
    ]


def _implied(
    description: KernelDescription, variant: Variant, known: Mapping[str, Any]
) -> frozenset[str]:
    """The sizes the variant's tile checks make divisible by 16.

    The launcher tests ``alignment % tile == 0`` with the tile compiled in (the largest
    the kernel compares the alignment with), and an alignment is the size's largest
    power-of-two divisor capped (1 for sizes not positive): with a tile of 16 or more,
    that holds only for sizes divisible by 16.
    """
    sizes = {p.name for p in description.signature.of_kind(ParameterKind.SIZE)}
    return frozenset(
        str(p.expression)
        for p in description.signature.of_kind(ParameterKind.SIZE_ALIGNMENT)
        if str(p.expression) in sizes and _constant(description, variant, p, {}, known) >= 16
    )


def _innermost_strides(description: KernelDescription) -> set[str]:
    """The stride parameters of each tensor's innermost dimension."""
    tensors = description.spec.tensor_parameters
    return {
        p.name
        for p in description.signature.of_kind(ParameterKind.STRIDE)
        if p.tensor_index is not None and p.dim == tensors[p.tensor_index].source.ndim - 1
    }


def _plan(
    description: KernelDescription,
    variant: Variant,
    padded: dict[str, int],
    given: Mapping[str, Any],
) -> Plan:
    """How ``variant`` is compiled: each parameter's type or constant value (``padded``
    and ``given``: the values of padded sizes and of constexprs the call gives)."""
    spec = description.spec
    tensors = spec.tensor_parameters
    scalars = {p.name: p for p in spec.scalar_parameters}
    innermost = _innermost_strides(description)
    integer = "i64" if variant.wide else "i32"
    implied = _implied(description, variant, {**given, **padded})
    types: list[tuple[str, str]] = []
    constants: dict[str, Any] = {}
    divisible: set[int] = set()
    passed = []
    for index, parameter in enumerate(description.signature):
        name, kind = parameter.name, parameter.kind
        if parameter.constexpr or (
            kind is ParameterKind.STRIDE and variant.unit and name in innermost
        ):
            known = {**given, **padded}
            constants[name] = _constant(description, variant, parameter, scalars, known)
            types.append((name, "constexpr"))
            continue
        if kind is ParameterKind.POINTER:
            assert parameter.tensor_index is not None
            dtype = tensors[parameter.tensor_index].source.dtype
            types.append((name, "*" + triton_type_name(DataType(dtype).name)))
            if variant.aligned:
                divisible.add(index)
        elif kind in (ParameterKind.SIZE, ParameterKind.STRIDE):
            types.append((name, integer))
            stride = kind is ParameterKind.STRIDE
            if variant.aligned if stride else variant.divisible or name in implied:
                divisible.add(index)
        elif kind is ParameterKind.SCALAR:
            types.append((name, scalar_types(scalars[name].source.dtype)[0]))
        else:
            raise CodegenError(
                f"{spec.label}: its kernel takes {name!r} ({kind.value}) from the caller at run "
                "time, which a C library's launch function has no place for"
            )
        passed.append(parameter)
    compiled = specialisation(types, constants, divisible)
    passed_implied = implied & {p.name for p in passed}
    return Plan(variant, compiled, tuple(passed), constants, dict(padded), passed_implied)


def _constant(
    description: KernelDescription,
    variant: Variant,
    parameter: KernelParameter,
    scalars: dict[str, Any],
    known: Mapping[str, Any],
) -> Any:
    """The value ``variant`` compiles in for a constexpr parameter (``known``: the values
    of padded sizes and of constexprs the call gives, fixed for this library)."""
    name, kind = parameter.name, parameter.kind
    if name in known:
        return known[name]
    if kind is ParameterKind.STRIDE:
        return 1
    if kind is ParameterKind.INT64_FLAG:
        return variant.wide
    if kind is ParameterKind.LAYOUT_FLAG:
        return variant.layout
    if kind is ParameterKind.DESCRIPTOR_FLAG:
        return False  # a C library's launcher gives no scratch memory for descriptors
    if kind is ParameterKind.SIZE_ALIGNMENT:
        tiles = description.alignment_tiles.get(name, ())
        return max(tiles) if variant.tiles and tiles else 1
    if kind is ParameterKind.META:
        return description.meta[name]
    if kind is ParameterKind.SCALAR and scalars[name].source.value is not None:
        return scalars[name].source.value
    if kind in (ParameterKind.SCALAR, ParameterKind.SYMBOL):
        raise CodegenError(
            f"{description.spec.name}: {name!r} is a constexpr the call gives, but the library "
            "was given no value to compile it for"
        )
    expression = parameter.expression
    if kind is ParameterKind.PADDED_SIZE and isinstance(expression, int):
        return next_power_of_two(expression)
    if (
        kind is ParameterKind.PADDED_SIZE
        and isinstance(expression, Symbol)
        and set(expression.names()) <= known.keys()
    ):
        return next_power_of_two(int(evaluate(expression, dict(known))))
    raise CodegenError(
        f"{description.spec.label}: {name!r} ({kind.value}) depends on sizes known only at run "
        "time (a tile as large as a dimension of run-time size is padded per call); a C "
        "library needs it fixed: give that dimension a literal size (Tensor(shape=(..., "
        "1024))), or build one variant per size with ninetoothed.build"
    )
