"""The C launch function of one kernel: the host code's work, then the launch.

What a just-in-time call does on the host before it launches (the argument
checks of ``ninetoothed.runtime.binding`` that need no dtype, then nt-triton's
generated host function: sizes and strides, the 64-bit decision, layout
flags, size alignments, memory written tensors share, the grid and its
checks) is written here as C, from the same description
(:mod:`nt_triton.description`), with the same messages; then the launcher
picks the first specialisation that serves the call (:mod:`._selection`),
finds its function in the current context and launches it.  One function
per translation unit: its statics (binaries, variant table, per-context
functions) are the unit's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nt_triton.aot._aliasing import emit_aliasing
from nt_triton.aot._buckets import run_time_padded
from nt_triton.aot._selection import emit_launch
from nt_triton.aot._variants import scalar_types
from nt_triton.aot._writer import Compiled, Writer, c_bytes, c_string
from nt_triton.description import KernelDescription, ParameterKind, size_name

__all__ = ["launcher_source"]


def launcher_source(
    description: KernelDescription,
    compiled: Sequence[Compiled],
    *,
    function: str,
    label: str,
    target: str,
    given: Mapping[str, Any] | None = None,
) -> str:
    """The C text of ``function`` (the runtime and headers come before it); ``given``:
    the values compiled in for the constexprs a call gives."""
    writer = Writer(description, compiled, label, target, given or {})
    statics = _statics(writer)
    _arguments(writer)
    _bound_checks(writer)
    _host_values(writer)
    _grid(writer)
    emit_launch(writer)
    names = writer.names
    parameters = ", ".join(
        ["NineToothedStream stream"]
        + [f"NineToothedTensor {names[p.name]}" for p in writer.spec.parameters]
    )
    body = "\n".join(writer.lines)
    return f"{statics}\nNineToothedResult {function}({parameters}) {{\n{body}\n}}\n"


def _statics(writer: Writer) -> str:
    """The unit's binaries, variant table and per-context table."""
    parts = [
        f"static const char nt_kernel[] = {c_string(writer.label)};",
        f"static const char nt_target[] = {c_string(writer.target)};",
    ]
    rows = []
    for index, item in enumerate(writer.compiled):
        cubin = item.binary.cubin
        parts.append(
            f"static const unsigned char nt_binary_{index}[{max(len(cubin), 1)}] NT_ALIGNED =\n"
            f"    {c_bytes(cubin)};"
        )
        rows.append(
            f"    {{nt_binary_{index}, {c_string(item.binary.name)}, {item.binary.shared}u, "
            f"{item.binary.threads}u, {c_string(item.plan.describe())}}},"
        )
    parts.append(
        "static const nt_variant_t nt_variants[NT_VARIANT_COUNT] = {\n" + "\n".join(rows) + "\n};"
    )
    parts.append("static nt_contexts_t nt_table = {.lock = PTHREAD_MUTEX_INITIALIZER};")
    return "\n".join(parts) + "\n"


def _arguments(writer: Writer) -> None:
    """Null checks, then sizes, strides and scalar values as locals."""
    spec, names = writer.spec, writer.names
    tensors = [p for p in writer.tensors]
    if tensors:
        quoted = ", ".join(c_string(p.name) for p in tensors)
        writer.emit(f"static const char *const nt_names[] = {{{quoted}}};")
        writer.emit(
            f"static const int nt_ndims[] = {{{', '.join(str(p.source.ndim) for p in tensors)}}};"
        )
        arguments = ", ".join(names[p.name] for p in tensors)
        writer.emit(f"const NineToothedTensor nt_tensors[] = {{{arguments}}};")
        writer.emit("char nt_text[1024];")
        writer.emit("(void)nt_names; (void)nt_ndims; (void)nt_tensors; (void)nt_text;")
    for t, parameter in enumerate(tensors):
        ndim, name = parameter.source.ndim, names[parameter.name]
        if t in writer.unused:  # never read: a one-element stand-in, as a just-in-time call's
            for d in range(ndim):
                writer.emit(f"const int64_t nt_size_{t}_{d} = 1, nt_stride_{t}_{d} = 1;")
            continue
        if ndim:
            writer.fail(
                "INVALID_ARGUMENT",
                f"{name}.shape == NULL || {name}.strides == NULL",
                f"parameter {parameter.name!r} has {ndim} dimension(s), but its shape or "
                "strides pointer is null",
            )
        for d in range(ndim):
            writer.fail(
                "INVALID_ARGUMENT",
                f"{name}.shape[{d}] > (uint64_t)INT64_MAX",
                f"parameter {parameter.name!r}: size %llu of dimension {d} exceeds 2^63 - 1",
                f"(unsigned long long){name}.shape[{d}]",
            )
            writer.emit(f"const int64_t nt_size_{t}_{d} = (int64_t){name}.shape[{d}];")
            writer.emit(f"const int64_t nt_stride_{t}_{d} = {name}.strides[{d}];")
            _given_size(writer, t, d)
    for index, parameter in enumerate(spec.scalar_parameters):
        if parameter.source.constexpr:
            if parameter.name in writer.given:  # the call gives it: compiled for one value
                _given_scalar(writer, parameter)
            continue  # compiled in: the argument is never read
        ctype = scalar_types(parameter.source.dtype)[1]
        name = names[parameter.name]
        writer.fail(
            "INVALID_ARGUMENT",
            f"{name}.data == NULL",
            f"scalar {parameter.name!r}: data must point to its value (a {ctype} in host "
            "memory), got a null pointer",
        )
        writer.locals[parameter.name] = f"nt_scalar_{index}"
        writer.emit(f"const {ctype} nt_scalar_{index} = *(const {ctype} *){name}.data;")


def _given_size(writer: Writer, t: int, d: int) -> None:
    """Refuse a size other than the one a constexpr size was compiled for
    (``NINETOOTHED_ERROR_NO_VARIANT``: a dispatcher tries its other variants)."""
    parameter = writer.tensors[t]
    name = size_name(parameter.name, d)
    if name not in writer.given or not writer.description.signature.by_name[name].constexpr:
        return
    writer.fail(
        "NO_VARIANT",
        f"nt_size_{t}_{d} != INT64_C({int(writer.given[name])})",
        f"parameter {parameter.name!r} has size %lld in dimension {d}, but this variant was "
        f"compiled for size {int(writer.given[name])} there",
        f"(long long)nt_size_{t}_{d}",
    )


def _given_scalar(writer: Writer, parameter: Any) -> None:
    """Refuse a value of a constexpr scalar the call gives other than the compiled one
    (``NINETOOTHED_ERROR_NO_VARIANT``: ``ninetoothed.build``'s dispatcher tries the
    variants compiled for other values)."""
    ctype = scalar_types(parameter.source.dtype)[1]
    name, value = writer.names[parameter.name], writer.given[parameter.name]
    writer.fail(
        "INVALID_ARGUMENT",
        f"{name}.data == NULL",
        f"scalar {parameter.name!r}: data must point to its value (a {ctype} in host "
        "memory), got a null pointer",
    )
    floating = ctype in ("double", "float")
    literal = repr(float(value)) if floating else f"INT64_C({int(value)})"
    shown, cast = ("%g", "(double)") if floating else ("%lld", "(long long)")
    writer.fail(
        "NO_VARIANT",
        f"*(const {ctype} *){name}.data != {literal}",
        f"constexpr {parameter.name!r} is {shown}, but this variant was compiled for "
        f"{parameter.name}={value!r}",
        f"{cast}*(const {ctype} *){name}.data",
    )


def _shapes(writer: Writer) -> str:
    count = len(writer.tensors)
    return f"nt_shapes(nt_text, sizeof nt_text, nt_tensors, nt_names, nt_ndims, {count})"


def _bound_checks(writer: Writer) -> None:
    """What ``bind_call`` checks without dtypes: declared sizes, sizes the arrangement ties."""
    for t, parameter in enumerate(writer.tensors):
        if t in writer.unused:
            continue
        for dim, size in enumerate(parameter.source.shape):
            if isinstance(size, int):
                writer.fail(
                    "SHAPE",
                    f"nt_size_{t}_{dim} != INT64_C({size})",
                    f"parameter {parameter.name!r} expects size {size} in dimension {dim}, "
                    "got shapes %s",
                    _shapes(writer),
                )
    for agreement in writer.spec.agreements:
        dims = [d for d in agreement.dims if d[0] not in writer.unused]
        if len(dims) > 1:
            _agreement(writer, agreement, dims)


def _agreement(writer: Writer, agreement: Any, dims: list[tuple[int, int]]) -> None:
    """Sizes ``agreement`` ties must be equal, except a broadcast view (stride 0 along
    the dimension) at least as long as the others, as ``bind_call`` allows: the size
    is the first dimension's that is not a broadcast view (else the first's)."""
    sizes = ", ".join(f"nt_size_{t}_{d}" for t, d in dims)
    strides = ", ".join(f"nt_stride_{t}_{d}" for t, d in dims)
    writer.emit("{")
    writer.emit(f"const int64_t nt_tied[] = {{{sizes}}}, nt_steps[] = {{{strides}}};", 2)
    writer.emit("int nt_at = 0;", 2)
    writer.emit(
        f"for (int nt_i = {len(dims) - 1}; nt_i >= 0; --nt_i) "
        "if (nt_steps[nt_i] != 0) nt_at = nt_i;",
        2,
    )
    first = writer.tensors[dims[0][0]].name
    for index, (other, dim) in enumerate(dims[1:], 1):
        name = writer.tensors[other].name
        writer.fail(
            "SHAPE",
            f"nt_tied[{index}] != nt_tied[nt_at] && "
            f"!(nt_steps[{index}] == 0 && nt_tied[{index}] > nt_tied[nt_at])",
            f"{first!r} (dimension {dims[0][1]}) and {name!r} (dimension {dim}) must have the "
            f"same size: {agreement.reason}; got shapes %s",
            _shapes(writer),
            depth=2,
        )
    writer.emit("}")


def _host_values(writer: Writer) -> None:
    """The 64-bit decision, layout flags, size alignments, the memory written tensors
    share (:mod:`._aliasing`)."""
    terms = []
    for t, parameter in enumerate(writer.tensors):
        ndim = parameter.source.ndim
        if ndim:
            sizes = ", ".join(f"nt_size_{t}_{d}" for d in range(ndim))
            strides = ", ".join(f"nt_stride_{t}_{d}" for d in range(ndim))
            arrays = f"(const int64_t[]){{{sizes}}}, (const int64_t[]){{{strides}}}"
            terms.append(f"nt_needs_64_bits({arrays}, {ndim})")
    writer.emit(f"const int nt_wide = {' || '.join(terms) or '0'};")
    signature = writer.description.signature
    for flag in signature.of_kind(ParameterKind.LAYOUT_FLAG):
        local = writer.locals[flag.name] = f"nt_{flag.name}"
        writer.emit(f"const int64_t {local} = ({writer.expression(flag.expression)}) != 0;")
    for aligned in signature.of_kind(ParameterKind.SIZE_ALIGNMENT):
        local = writer.locals[aligned.name] = f"nt_{aligned.name}"
        size, cap = writer.expression(aligned.expression), writer.expression(aligned.cap)
        writer.emit(f"const int64_t {local} = nt_alignment({size}, {cap});")
    emit_aliasing(writer, writer.description.outputs)
    for padded in run_time_padded(writer.description, writer.given):  # compiled per power of two
        local = writer.locals[padded.name] = f"nt_{padded.name}"
        writer.emit(
            f"const int64_t {local} = nt_next_power_of_two({writer.expression(padded.expression)});"
        )


def _grid(writer: Writer) -> None:
    """The grid, the outermost-shape checks and the size requirements, as the host's."""
    writer.emit("nt_arithmetic_error = 0;")
    grid = []
    for d, size in enumerate(writer.description.grid):
        writer.emit(f"const int64_t nt_grid_{d} = nt_max({writer.expression(size)}, 0);")
        grid.append(f"nt_grid_{d}")
    if grid:
        writer.emit(f"const int64_t nt_grid[] = {{{', '.join(grid)}}};")
        writer.emit("char nt_text_a[256], nt_text_b[256];")
        writer.emit("(void)nt_grid; (void)nt_text_a; (void)nt_text_b;")
    _shape_checks(writer, grid)
    _requirements(writer)
    writer.fail(
        "SHAPE",
        "nt_arithmetic_error",
        "a launch size divides by zero for shapes %s",
        _shapes(writer),
    )
    count = " * ".join(grid) or "1"
    writer.emit(f"int64_t nt_programs = {count};")


def _used(writer: Writer, parameter: str) -> bool:
    """Whether the call uses tensor ``parameter`` (a check of an unused one is skipped)."""
    index = {p.name: i for i, p in enumerate(writer.tensors)}
    return index.get(parameter) not in writer.unused


def _shape_checks(writer: Writer, grid: list[str]) -> None:
    """Each arranged tensor's outermost shape must be the grid."""
    first = writer.tensors[0].name if writer.tensors else ""
    description = writer.description
    for check, walked in zip(description.shape_checks, description.broadcasts):
        if not _used(writer, check.parameter):
            continue
        shape = [f"nt_max({writer.expression(s)}, 0)" for s in check.shape]
        differs = " || ".join(_differs(writer, check, walked, grid)) or "0"
        writer.emit("{")
        writer.emit(f"const int64_t nt_shape[] = {{{', '.join(shape) or '0'}}};", 2)
        if check.parameter in writer.spec.beside_grid:
            text = (
                f"the arranged {check.parameter!r} has outermost shape %s, larger than the "
                f"launch grid (from {first!r}) %s in some dimension, so no program would reach "
                "its last tiles; the arguments' shapes do not fit the arrangement together (%s)"
            )
        else:
            text = (
                f"the arranged {check.parameter!r} has outermost shape %s, but the launch grid "
                f"(from {first!r}) is %s; the arguments' shapes do not fit the arrangement "
                "together (%s)"
            )
        writer.fail(
            "SHAPE",
            differs,
            text,
            f"nt_tuple(nt_text_a, sizeof nt_text_a, nt_shape, {len(shape)})",
            f"nt_tuple(nt_text_b, sizeof nt_text_b, nt_grid, {len(grid)})",
            _shapes(writer),
            depth=2,
        )
        writer.emit("}")


def _differs(
    writer: Writer, check: Any, walked: tuple[int | None, ...] | None, grid: list[str]
) -> list[str]:
    """Per outermost dimension, C that is true where ``check``'s shape does not fit the
    grid, as the host function's: a tensor beside the grid may be shorter, a broadcast
    view (stride 0 along the source dimension ``walked`` names) longer."""
    count = len(grid)
    if check.parameter in writer.spec.beside_grid:
        return [f"nt_shape[{i}] > {g}" for i, g in zip(range(count), grid)]
    index = next(i for i, p in enumerate(writer.tensors) if p.name == check.parameter)
    walked = walked or (None,) * count
    return [
        f"nt_shape[{i}] != {g}"
        if d is None
        else f"(nt_shape[{i}] != {g} && !(nt_stride_{index}_{d} == 0 && nt_shape[{i}] > {g}))"
        for i, g, d in zip(range(count), grid, walked)
    ]


def _requirements(writer: Writer) -> None:
    """Sizes that must take one of a few values (``expand`` and ``squeeze``'s 1)."""
    for requirement in writer.description.requirements:
        if not _used(writer, requirement.parameter):
            continue
        value = writer.expression(requirement.size)
        allowed = " && ".join(f"nt_value != INT64_C({a})" for a in requirement.allowed) or "1"
        writer.emit("{")
        writer.emit(f"const int64_t nt_value = {value};", 2)
        writer.fail(
            "SHAPE",
            allowed,
            f"{requirement.message}, got %lld for shapes %s",
            "(long long)nt_value",
            _shapes(writer),
            depth=2,
        )
        writer.emit("}")
