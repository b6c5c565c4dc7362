"""Per-call host work: kernel arguments, grid, checks, and the launch.

Everything that does not depend on the call's arguments is done once, here,
when the kernel is generated: the code that unpacks sizes and strides, checks
that the arranged tensors' outermost shapes agree, computes the grid and
decides on 64-bit offsets is itself generated as a small Python function, so
a call costs one function call plus Triton's launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.hookspecs import TensorInfo
from ninetoothed.ir import KernelSpec
from ninetoothed.symbol import Symbol, SymbolLike, next_power_of_two
from nt_triton.codegen import INT64_FLAG, GeneratedSource, KernelWriter

INT32_LIMIT = 2**31 - 1

HostFunction = Callable[
    [Sequence[TensorInfo], Sequence[Any], dict[str, Any]], tuple[list[Any], Any]
]


def host_source(spec: KernelSpec, writer: KernelWriter, generated: GeneratedSource) -> str:
    """Python source of ``ninetoothed_host(tensors, pointers, scalars) -> (args, grid)``."""
    lines = ["def ninetoothed_host(tensors, pointers, scalars):"]
    tensor_parameters = spec.tensor_parameters
    for index, parameter in enumerate(tensor_parameters):
        ndim = parameter.source.ndim
        if ndim:
            sizes = ", ".join(f"{parameter.name}_size_{d}" for d in range(ndim))
            strides = ", ".join(f"{parameter.name}_stride_{d}" for d in range(ndim))
            lines.append(f"    {sizes}, = tensors[{index}].shape")
            lines.append(f"    {strides}, = tensors[{index}].strides")
    given = (
        [p.name for p in spec.scalar_parameters]
        + sorted(spec.runtime_symbols)
        + sorted(spec.constexpr_symbols)
    )
    for name in given:
        lines.append(f"    {name} = scalars[{name!r}]")
    # 64-bit offsets only where some tensor's largest offset needs them.
    extents = []
    for parameter in tensor_parameters:
        ndim = parameter.source.ndim
        terms = " + ".join(
            f"(max({parameter.name}_size_{d}, 1) - 1) * abs({parameter.name}_stride_{d})"
            for d in range(ndim)
        )
        if terms:
            extents.append(f"({terms})")
    flag = " or ".join(f"{extent} > {INT32_LIMIT}" for extent in extents) or "False"
    lines.append(f"    {INT64_FLAG} = {flag}")
    for padded in generated.padded_sizes:
        if any(s.meta for s in padded.size.free_symbols.values()):  # type: ignore[union-attr]
            continue  # supplied by each auto-tuning configuration
        lines.append(f"    {padded.name} = next_power_of_two({padded.size})")

    grid_lines = _grid_lines(spec, writer)
    if spec.meta_symbols:
        lines.append("    def grid(META):")
        for name in sorted(spec.meta_symbols):
            lines.append(f"        {name} = META[{name!r}]")
        lines.extend("    " + line for line in grid_lines)
        lines.append("    ")
    else:
        lines.extend(grid_lines)
        lines.append("    grid = ninetoothed_grid")
    arguments = []
    pointer_index = 0
    for name in generated.parameters:
        expected = (
            f"{tensor_parameters[pointer_index].name}_pointer"
            if pointer_index < len(tensor_parameters)
            else None
        )
        if name == expected:
            arguments.append(f"pointers[{pointer_index}]")
            pointer_index += 1
        else:
            arguments.append(name)
    lines.append(f"    return [{', '.join(arguments)}], grid")
    return "\n".join(lines) + "\n"


def _grid_lines(spec: KernelSpec, writer: KernelWriter) -> list[str]:
    """Lines (indented for the host function) that compute and check the grid."""
    lines = []
    grid = writer.grid
    names = []
    for dim, size in enumerate(grid):
        lines.append(f"    ninetoothed_grid_size_{dim} = max({size}, 0)")
        names.append(f"ninetoothed_grid_size_{dim}")
    grid_tuple = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    tensors = spec.tensor_parameters
    for parameter in tensors:
        shape = [writer.expression(size) for size in parameter.arranged.shape]
        if all(_same(a, b) for a, b in zip(shape, grid)):
            continue
        shape_text = (
            "(" + ", ".join(f"max({s}, 0)" for s in shape) + ("," if len(shape) == 1 else "") + ")"
        )
        lines.append(f"    if {shape_text} != {grid_tuple}:")
        lines.append(
            f"        ninetoothed_mismatch({parameter.name!r}, {shape_text}, {grid_tuple}, tensors)"
        )
    for parameter in tensors:
        for requirement in parameter.arranged.all_requirements().values():
            size = writer.expression(requirement.size)
            lines.append(f"    if {size} != 1:")
            lines.append(f"        ninetoothed_unmet({requirement.message!r}, {size}, tensors)")
    program_count = " * ".join(names) if names else "1"
    lines.append(f"    ninetoothed_grid = ({program_count},)")
    if spec.meta_symbols:
        lines.append("    return ninetoothed_grid")
    return lines


def _same(left: SymbolLike, right: SymbolLike) -> bool:
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return left == right
    return not isinstance(left, Symbol) and not isinstance(right, Symbol) and left == right


def compile_host(source: str, spec: KernelSpec) -> HostFunction:
    """Turn :func:`host_source`'s text into a function."""

    def mismatch(name: str, shape: tuple[int, ...], grid: tuple[int, ...], tensors: Any) -> None:
        described = ", ".join(
            f"{p.name}: {tuple(t.shape)}" for p, t in zip(spec.tensor_parameters, tensors)
        )
        raise LaunchError(
            f"{spec.name}: the arranged {name!r} has outermost shape {shape}, but the launch grid "
            f"(from {spec.tensor_parameters[0].name!r}) is {grid}; the arguments' shapes do not "
            f"fit the arrangement together ({described})"
        )

    def unmet(message: str, value: int, tensors: Any) -> None:
        described = ", ".join(
            f"{p.name}: {tuple(t.shape)}" for p, t in zip(spec.tensor_parameters, tensors)
        )
        raise LaunchError(f"{spec.name}: {message}, got {value} for shapes {described}")

    namespace: dict[str, Any] = {
        "next_power_of_two": next_power_of_two,
        "ninetoothed_mismatch": mismatch,
        "ninetoothed_unmet": unmet,
    }
    exec(compile(source, f"<ninetoothed host code of {spec.name}>", "exec"), namespace)  # noqa: S102
    return namespace["ninetoothed_host"]
