"""Host code: per call, the kernel's arguments and grid, generated from its signature.

Everything per call that does not depend on values is done once, when the
kernel is generated: unpacking sizes and strides, reading scalars and
symbols, the 64-bit decision, padded tile sizes, checking that the arranged
tensors' outermost shapes agree, and the grid are written as one small Python
function, :data:`HostFunction`, so a call costs one function call plus the
launch.  The function returns a :class:`LaunchPlan`: the arguments the
signature passes positionally (:attr:`~nt_triton._abi.KernelSignature.host`),
in order, the grid (a tuple, or a function of the meta values for auto-tuned
kernels), and the meta values the caller pinned, if any.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ninetoothed.arrangement.symbol import Symbol, next_power_of_two
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.aliasing import Aliasing
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _tuning as tuning
from nt_triton._abi import KernelSignature, ParameterKind
from nt_triton._codegen import GeneratedSource, persistent_loop
from nt_triton._codegen import naming as n
from nt_triton._codegen.product import ShapeCheck
from nt_triton._describable import describable
from nt_triton._persistent_grid import program_cap
from nt_triton.cache._sources import compiled

__all__ = [
    "Grid",
    "HostFunction",
    "INDEX_LIMIT",
    "INT32_LIMIT",
    "LaunchPlan",
    "broadcast_dims",
    "compile_host",
    "fits_broadcast",
    "fits_within",
    "host_filename",
    "host_source",
]

INT32_LIMIT = 2**31 - 1

INDEX_LIMIT = 2**30
"""The most elements a tensor may have for 32-bit indices: any index into it,
flattened or not, plus the padding of a tile (far below 2^30) stays in int32."""

Grid = tuple[int, ...] | Callable[[Mapping[str, int]], tuple[int, ...]]
"""A launch grid, or (auto-tuned kernels) a function of the meta values."""


class LaunchPlan(NamedTuple):
    """One call's launch, prepared: what :meth:`nt_triton._kernel.TritonKernel.launch` runs."""

    arguments: list[Any]
    """The kernel's positional arguments, in signature order
    (:attr:`~nt_triton._abi.KernelSignature.host`)."""

    grid: Grid
    meta: dict[str, int] | None
    """Pinned meta values (the caller gave every meta symbol), with the padded sizes
    derived from them; ``None`` when auto-tuning chooses."""


HostFunction = Callable[[Sequence[TensorInfo], Sequence[Any], dict[str, Any]], LaunchPlan]
"""``(tensors, pointers, scalars) -> LaunchPlan``."""


def host_source(spec: KernelSpec, generated: GeneratedSource) -> str:
    """Python source of the host function (see the module docstring)."""
    lines = [f"def {n.HOST_FUNCTION}({n.HOST_TENSORS}, {n.HOST_POINTERS}, {n.HOST_SCALARS}):"]
    if spec.conditional:
        lines.append(f"    {n.UNUSED} = {n.UNUSED_OF}({n.HOST_SCALARS})")
    lines += _unpacking(spec, generated)
    if spec.meta_symbols:
        lines.append(f"    def {n.GRID_FUNCTION}({n.META}):")
        for name in sorted(spec.meta_symbols):
            lines.append(f"        {name} = {n.META}[{name!r}]")
        lines.extend("    " + line for line in _grid_lines(spec, generated))
        lines.append("    ")
    else:
        lines.extend(_grid_lines(spec, generated))
        lines.append(f"    {n.GRID_FUNCTION} = {n.GRID}")
    arguments = []
    jagged = spec.jagged_parameters
    for parameter in generated.signature.host:
        if parameter.kind is ParameterKind.POINTER:
            # A jagged tensor's entry is (values, offsets, extent): see
            # ninetoothed.arrangement._jagged.
            part = "[0]" if parameter.tensor_index in jagged else ""
            arguments.append(f"{n.HOST_POINTERS}[{parameter.tensor_index}]{part}")
        elif parameter.kind is ParameterKind.OFFSETS:
            arguments.append(f"{n.HOST_POINTERS}[{parameter.tensor_index}][1]")
        else:
            arguments.append(parameter.name)
    meta = (
        f"{n.PIN}({n.HOST_SCALARS}) if {n.HOST_SCALARS} else None" if spec.meta_symbols else "None"
    )
    plan = f"([{', '.join(arguments)}], {n.GRID_FUNCTION}, {meta})"
    # tuple.__new__ directly: a named tuple's own constructor costs a Python call.
    lines.append(f"    return {n.NEW_TUPLE}({n.PLAN}, {plan})")
    return "\n".join(lines) + "\n"


def _unpacking(spec: KernelSpec, generated: GeneratedSource) -> list[str]:
    """Sizes, strides, scalars and symbols as locals; the 64-bit flag, layout flags and
    size alignments; padded sizes."""
    lines = []
    tensors = spec.tensor_parameters
    for index, parameter in enumerate(tensors):
        ndim = parameter.source.ndim
        if ndim:
            sizes = ", ".join(n.size(parameter.name, d) for d in range(ndim))
            strides = ", ".join(n.stride(parameter.name, d) for d in range(ndim))
            lines.append(f"    {sizes}, = {n.HOST_TENSORS}[{index}].shape")
            lines.append(f"    {strides}, = {n.HOST_TENSORS}[{index}].strides")
    signature = generated.signature
    given = signature.of_kind(ParameterKind.SCALAR) + signature.of_kind(ParameterKind.SYMBOL)
    for value in given:
        lines.append(f"    {value.name} = {n.HOST_SCALARS}[{value.name!r}]")
    # 64 bits only where some tensor needs them: its largest offset (the extent,
    # not the largest stride: offsets add up over dimensions) exceeds int32, or an
    # index into it (grid index * tile + arange, flattened ones too) may.
    limits = []
    for index, parameter in enumerate(tensors):
        dims = range(parameter.source.ndim)
        extent = " + ".join(
            f"(max({n.size(parameter.name, d)}, 1) - 1) * abs({n.stride(parameter.name, d)})"
            for d in dims
        )
        if index in spec.jagged_parameters:  # its entries lie one after another in the values
            extent = f"{n.HOST_POINTERS}[{index}][2]"
        elements = " * ".join(n.size(parameter.name, d) for d in dims)
        if extent:
            limits.append(f"({extent}) > {INT32_LIMIT} or {elements} > {INDEX_LIMIT}")
    flag = " or ".join(limits) or "False"
    lines.append(f"    {n.INT64_FLAG} = {flag}")
    for layout in signature.of_kind(ParameterKind.LAYOUT_FLAG):
        lines.append(f"    {layout.name} = bool({layout.expression})")
    for described in signature.of_kind(ParameterKind.DESCRIPTOR_FLAG):
        at = described.tensor_index
        tensor, pointer = f"{n.HOST_TENSORS}[{at}]", f"{n.HOST_POINTERS}[{at}]"
        # Descriptors' coordinates are 32-bit: none where offsets need 64 bits.
        lines.append(
            f"    {described.name} = not {n.INT64_FLAG} and {n.DESCRIBABLE}({tensor}, {pointer})"
        )
    # Tile range checks vanish where this is a multiple of the tile (codegen.divisibility).
    for aligned in signature.of_kind(ParameterKind.SIZE_ALIGNMENT):
        size = f"({aligned.expression})"
        # 1 for an empty (or, after a slice, negative) extent: no tile divides it.
        lines.append(
            f"    {aligned.name} = min({size} & -{size}, {aligned.cap}) if {size} > 0 else 1"
        )
    # A written tensor that shares memory with another argument or with itself
    # would be written by several programs at once, or read after another
    # program wrote it: torch refuses such calls, so do we (ninetoothed.runtime.aliasing).
    if generated.outputs:
        unused = n.UNUSED if spec.conditional else "()"
        lines.append(f"    {n.OVERLAP}({n.HOST_TENSORS}, {unused})")
    for padded in signature.of_kind(ParameterKind.PADDED_SIZE):
        lines.append(f"    {padded.name} = {n.NEXT_POWER_OF_TWO}({padded.expression})")
    return lines


def _grid_lines(spec: KernelSpec, generated: GeneratedSource) -> list[str]:
    """Lines (indented for the host function) that compute and check the grid."""
    lines = []
    names = []
    for dim, size in enumerate(generated.grid):
        lines.append(f"    {n.grid_size(dim)} = max({size}, 0)")
        names.append(n.grid_size(dim))
    grid_tuple = _tuple(names)
    for check in generated.shape_checks:
        shape_text = _tuple([f"max({s}, 0)" for s in check.shape])
        condition = f"{shape_text} != {grid_tuple}"
        if check.parameter in spec.beside_grid:
            condition += f" and not {n.FITS_WITHIN}({shape_text}, {grid_tuple})"
        elif (broadcasts := _broadcast_flags(spec, check)) is not None:
            condition += f" and not {n.FITS_BROADCAST}({shape_text}, {grid_tuple}, {broadcasts})"
        lines.append(f"    if {_unless_unused(spec, check.parameter)}{condition}:")
        lines.append(
            f"        {n.MISMATCH}({check.parameter!r}, {shape_text}, {grid_tuple}, "
            f"{n.HOST_TENSORS})"
        )
    for requirement in generated.requirements:
        unless = _unless_unused(spec, requirement.parameter)
        lines.append(f"    if {unless}{requirement.size} not in {requirement.allowed!r}:")
        lines.append(
            f"        {n.UNMET}({requirement.message!r}, {requirement.size}, {n.HOST_TENSORS})"
        )
    program_count = " * ".join(names) if names else "1"
    if persistent_loop.requested(spec):
        # Each program loops over the grid (codegen.persistence): one per multiprocessor.
        program_count = f"min({program_count}, {n.PROGRAM_CAP}())"
    lines.append(f"    {n.GRID} = ({program_count},)")
    if spec.meta_symbols:
        lines.append(f"    return {n.GRID}")
    return lines


def broadcast_dims(spec: KernelSpec, check: ShapeCheck) -> tuple[int | None, ...] | None:
    """Per outermost dimension of ``check``'s parameter, the one source dimension it
    walks (whose stride 0 at the call makes it a broadcast view), else None; None
    where no dimension walks one.

    Such a dimension may be longer than the grid's: every index reads one value,
    so the programs never reading its last indices miss nothing (ntops's
    attention reads a mask expanded to every query head at the key-value head's
    index).  A written tensor cannot be such a view: the aliasing check refuses
    a tensor that overlaps itself.  The ahead-of-time launcher checks the same.
    """
    parameter = next(p for p in spec.tensor_parameters if p.name == check.parameter)
    sizes = {n.size(parameter.name, d): d for d in range(parameter.source.ndim)}
    walked_dims: list[int | None] = []
    for size in check.shape:
        names = size.names() if isinstance(size, Symbol) else set()
        walked = {sizes[name] for name in names if name in sizes}
        walked_dims.append(walked.pop() if len(walked) == 1 else None)
    if all(dim is None for dim in walked_dims):
        return None
    return tuple(walked_dims)


def _broadcast_flags(spec: KernelSpec, check: ShapeCheck) -> str | None:
    """Python source of a tuple telling, per outermost dimension of ``check``'s
    parameter, whether it is a broadcast view at the call (:func:`broadcast_dims`)."""
    dims = broadcast_dims(spec, check)
    if dims is None:
        return None
    return _tuple(["False" if d is None else f"{n.stride(check.parameter, d)} == 0" for d in dims])


def fits_broadcast(
    shape: tuple[int, ...], grid: tuple[int, ...], broadcast: tuple[bool, ...]
) -> bool:
    """Whether an outermost ``shape`` fits the ``grid``: equal, or longer where its
    dimension is a broadcast view (see :func:`_broadcast_flags`)."""
    return all(s == g or (b and s > g) for s, g, b in zip(shape, grid, broadcast))


def fits_within(shape: tuple[int, ...], grid: tuple[int, ...]) -> bool:
    """Whether a tensor beside the grid (``KernelSpec.beside_grid``) has no tile the
    grid's programs would not reach: an outermost ``shape`` no larger than the grid."""
    return all(s <= g for s, g in zip(shape, grid))


def _unless_unused(spec: KernelSpec, parameter: str) -> str:
    """The start of a launch check's condition that skips it where the call leaves
    ``parameter`` unused (its tensor is then a one-element stand-in): empty for
    parameters every call uses."""
    for conditional in spec.conditional:
        if conditional.name == parameter:
            return f"{conditional.index} not in {n.UNUSED} and "
    return ""


def _tuple(items: Sequence[str]) -> str:
    """Python source of a tuple of ``items``."""
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def compile_host(
    source: str, spec: KernelSpec, signature: KernelSignature, aliasing: Aliasing
) -> HostFunction:
    """Turn :func:`host_source`'s text into a function; ``aliasing`` checks the memory
    the written tensors share."""

    def described(tensors: Sequence[TensorInfo]) -> str:
        return ", ".join(
            f"{p.name}: {tuple(t.shape)}" for p, t in zip(spec.tensor_parameters, tensors)
        )

    def mismatch(
        name: str, shape: tuple[int, ...], grid: tuple[int, ...], tensors: Sequence[TensorInfo]
    ) -> None:
        if name in spec.beside_grid:
            raise LaunchError(
                f"{spec.label}: the arranged {name!r} has outermost shape {shape}, larger than "
                f"the launch grid (from {spec.tensor_parameters[0].name!r}) {grid} in some "
                "dimension, so no program would reach its last tiles; the arguments' shapes "
                f"do not fit the arrangement together ({described(tensors)})"
            )
        raise LaunchError(
            f"{spec.label}: the arranged {name!r} has outermost shape {shape}, but the launch grid "
            f"(from {spec.tensor_parameters[0].name!r}) is {grid}; the arguments' shapes do not "
            f"fit the arrangement together ({described(tensors)})"
        )

    def unmet(message: str, value: int, tensors: Sequence[TensorInfo]) -> None:
        raise LaunchError(f"{spec.label}: {message}, got {value} for shapes {described(tensors)}")

    namespace: dict[str, Any] = {
        n.NEXT_POWER_OF_TWO: next_power_of_two,
        n.MISMATCH: mismatch,
        n.FITS_BROADCAST: fits_broadcast,
        n.FITS_WITHIN: fits_within,
        n.UNMET: unmet,
        n.OVERLAP: aliasing.check,
        n.UNUSED_OF: spec.unused_parameters,
        n.PIN: _pinning(spec, signature),
        n.NEW_TUPLE: tuple.__new__,
        n.PLAN: LaunchPlan,
        n.PROGRAM_CAP: program_cap,
        n.DESCRIBABLE: describable,
    }
    exec(compiled(source, host_filename(spec)), namespace)  # noqa: S102
    function: HostFunction = namespace[n.HOST_FUNCTION]
    return function


def host_filename(spec: KernelSpec) -> str:
    """The file name tracebacks show for the host code of ``spec``."""
    return f"<ninetoothed host code of {spec.name}>"


def _pinning(
    spec: KernelSpec, signature: KernelSignature
) -> Callable[[Mapping[str, Any]], dict[str, int] | None]:
    """The function turning a call's keywords into pinned meta values (None: tune).

    Pinning skips tuning only when every meta symbol is given; the padded
    sizes derived from them come along.
    """
    names = tuple(spec.meta_symbols)

    def pinned(scalars: Mapping[str, Any]) -> dict[str, int] | None:
        values = {name: int(scalars[name]) for name in names if name in scalars}
        if not values:
            return None
        missing = set(names) - set(values)
        if missing:
            raise LaunchError(
                f"{spec.label}: to skip auto-tuning give every meta symbol; missing "
                f"{', '.join(sorted(missing))}"
            )
        return {**values, **tuning.derived_meta_values(signature, values)}

    return pinned
