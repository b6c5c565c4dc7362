"""The C launch function of one kernel: the host code's work, then the launch.

What a just-in-time call does on the host before it launches (the argument
checks of ``ninetoothed.runtime.binding`` that need no dtype, then nt-triton's
generated host function: sizes and strides, the 64-bit decision, layout
flags, size alignments, overlapping outputs, the grid and its checks) is
written here as C, from the same description (:mod:`._bridge`), with the
same messages; then the launcher picks the first specialisation that serves
the call (:mod:`._variants`), finds its function in the current context and
launches it.  One function per translation unit: its statics (binaries,
variant table, per-context functions) are the unit's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ninetoothed.arrangement.symbol import SymbolLike
from ninetoothed.errors import CodegenError
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton.aot import _bridge
from nt_triton.aot._aliasing import emit_aliasing
from nt_triton.aot._bridge import KernelDescription, ParameterKind
from nt_triton.aot._cexpr import to_c
from nt_triton.aot._compile import Binary
from nt_triton.aot._variants import Plan, Variant, scalar_types

__all__ = ["Compiled", "c_names", "launcher_source"]


@dataclass(frozen=True)
class Compiled:
    """One specialisation, compiled."""

    plan: Plan
    binary: Binary


_C_TYPES = {
    ".u64": "uint64_t",
    ".s64": "int64_t",
    ".b64": "uint64_t",
    ".u32": "uint32_t",
    ".s32": "int32_t",
    ".b32": "uint32_t",
    ".u16": "uint16_t",
    ".s16": "int16_t",
    ".b16": "uint16_t",
    ".u8": "uint8_t",
    ".s8": "int8_t",
    ".b8": "uint8_t",
    ".f32": "float",
    ".f64": "double",
}
"""The C type a kernel parameter of each PTX type is passed as."""


def c_string(text: str) -> str:
    """``text`` as a C string literal (JSON's escapes are C's for these characters)."""
    return json.dumps(text, ensure_ascii=True).replace("?", "\\?")


def c_names(spec: KernelSpec) -> list[str]:
    """The launch function's parameter names: the application's, one made safe where
    it is a C or C++ keyword."""
    from ninetoothed.aot import C_KEYWORDS

    return [p.name + "_" if p.name in C_KEYWORDS else p.name for p in spec.parameters]


class _Writer:
    """Writes one launch function (see the module docstring)."""

    def __init__(
        self, description: KernelDescription, compiled: Sequence[Compiled], label: str, target: str
    ) -> None:
        self.description = description
        self.spec = description.spec
        self.compiled = compiled
        self.label = label
        self.target = target
        self.lines: list[str] = []
        self.tensors = self.spec.tensor_parameters
        self.names = dict(zip((p.name for p in self.spec.parameters), c_names(self.spec)))
        self.unused = self.spec.unused_parameters(
            {p.name: p.source.value for p in self.spec.scalar_parameters if p.source.constexpr}
        )
        self.locals: dict[str, str] = {}
        for t, parameter in enumerate(self.tensors):
            for d in range(parameter.source.ndim):
                self.locals[_bridge.size_name(parameter.name, d)] = f"nt_size_{t}_{d}"
                self.locals[_bridge.stride_name(parameter.name, d)] = f"nt_stride_{t}_{d}"
        for name, value in description.meta.items():
            self.locals[name] = f"INT64_C({int(value)})"

    def emit(self, line: str = "", depth: int = 1) -> None:
        self.lines.append("    " * depth + line if line else "")

    def fail(self, status: str, condition: str, message: str, *values: str, depth: int = 1) -> None:
        """``if (condition) return nt_fail(status, "<label>: message", values...);``"""
        arguments = "".join(f", {v}" for v in values)
        self.emit(f"if ({condition})", depth)
        text = c_string(f"%s: {message}")
        self.emit(
            f"return nt_fail(NINETOOTHED_ERROR_{status}, {text}, nt_kernel{arguments});", depth + 1
        )

    def expression(self, value: SymbolLike | bool | None) -> str:
        assert value is not None, "an expression the signature promises"
        try:
            return to_c(int(value) if isinstance(value, bool) else value, self.locals)
        except CodegenError as error:
            raise CodegenError(f"{self.label}: {error}") from error


def launcher_source(
    description: KernelDescription,
    compiled: Sequence[Compiled],
    *,
    function: str,
    label: str,
    target: str,
) -> str:
    """The C text of ``function`` (the runtime and headers come before it)."""
    writer = _Writer(description, compiled, label, target)
    statics = _statics(writer)
    _arguments(writer)
    _bound_checks(writer)
    _host_values(writer)
    _grid(writer)
    _launch(writer)
    names = writer.names
    parameters = ", ".join(
        ["NineToothedStream stream"]
        + [f"NineToothedTensor {names[p.name]}" for p in writer.spec.parameters]
    )
    body = "\n".join(writer.lines)
    return f"{statics}\nNineToothedResult {function}({parameters}) {{\n{body}\n}}\n"


def _statics(writer: _Writer) -> str:
    """The unit's binaries, variant table and per-context table."""
    parts = [
        f"static const char nt_kernel[] = {c_string(writer.label)};",
        f"static const char nt_target[] = {c_string(writer.target)};",
    ]
    rows = []
    for index, item in enumerate(writer.compiled):
        data = ",".join(str(byte) for byte in item.binary.cubin)
        parts.append(f"static const unsigned char nt_binary_{index}[] NT_ALIGNED = {{{data}}};")
        rows.append(
            f"    {{nt_binary_{index}, {c_string(item.binary.name)}, {item.binary.shared}u, "
            f"{item.binary.threads}u, {c_string(item.plan.variant.describe())}}},"
        )
    parts.append(
        "static const nt_variant_t nt_variants[NT_VARIANT_COUNT] = {\n" + "\n".join(rows) + "\n};"
    )
    parts.append("static nt_contexts_t nt_table = {.lock = PTHREAD_MUTEX_INITIALIZER};")
    return "\n".join(parts) + "\n"


def _arguments(writer: _Writer) -> None:
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
    for index, parameter in enumerate(spec.scalar_parameters):
        if parameter.source.constexpr:
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


def _shapes(writer: _Writer) -> str:
    count = len(writer.tensors)
    return f"nt_shapes(nt_text, sizeof nt_text, nt_tensors, nt_names, nt_ndims, {count})"


def _bound_checks(writer: _Writer) -> None:
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
        for (first, first_dim), (other, dim) in zip(dims[:1] * len(dims), dims[1:]):
            a, b = writer.tensors[first].name, writer.tensors[other].name
            writer.fail(
                "SHAPE",
                f"nt_size_{first}_{first_dim} != nt_size_{other}_{dim}",
                f"{a!r} (dimension {first_dim}) and {b!r} (dimension {dim}) must have the "
                f"same size: the arrangement reads both at the same index "
                f"({agreement.index}), so where one ends the other would be masked and "
                "the result silently wrong; got shapes %s",
                _shapes(writer),
            )


def _host_values(writer: _Writer) -> None:
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


def _grid(writer: _Writer) -> None:
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


def _used(writer: _Writer, parameter: str) -> bool:
    """Whether the call uses tensor ``parameter`` (a check of an unused one is skipped)."""
    index = {p.name: i for i, p in enumerate(writer.tensors)}
    return index.get(parameter) not in writer.unused


def _shape_checks(writer: _Writer, grid: list[str]) -> None:
    """Each arranged tensor's outermost shape must be the grid."""
    first = writer.tensors[0].name if writer.tensors else ""
    for check in writer.description.shape_checks:
        if not _used(writer, check.parameter):
            continue
        shape = [f"nt_max({writer.expression(s)}, 0)" for s in check.shape]
        differs = " || ".join(f"{s} != {g}" for s, g in zip(shape, grid)) or "0"
        writer.emit("{")
        writer.emit(f"const int64_t nt_shape[] = {{{', '.join(shape) or '0'}}};", 2)
        writer.fail(
            "SHAPE",
            differs,
            f"the arranged {check.parameter!r} has outermost shape %s, but the launch grid "
            f"(from {first!r}) is %s; the arguments' shapes do not fit the arrangement "
            "together (%s)",
            f"nt_tuple(nt_text_a, sizeof nt_text_a, nt_shape, {len(shape)})",
            f"nt_tuple(nt_text_b, sizeof nt_text_b, nt_grid, {len(grid)})",
            _shapes(writer),
            depth=2,
        )
        writer.emit("}")


def _requirements(writer: _Writer) -> None:
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


def _launch(writer: _Writer) -> None:
    """Pick the first specialisation that serves the call; load; launch."""
    writer.emit("if (nt_programs == 0) return NINETOOTHED_SUCCESS;  /* nothing to run */")
    for t, parameter in enumerate(writer.tensors):
        if t in writer.unused or not parameter.source.ndim:
            continue
        name = writer.names[parameter.name]
        elements = " && ".join(f"nt_size_{t}_{d} != 0" for d in range(parameter.source.ndim))
        writer.fail(
            "INVALID_ARGUMENT",
            f"{name}.data == NULL && {elements}",
            f"parameter {parameter.name!r} has elements, but its data pointer is null",
        )
    writer.emit("int nt_variant = NT_VARIANT_COUNT - 1;")
    for index, item in enumerate(writer.compiled[:-1]):
        keyword = "if" if index == 0 else "else if"
        writer.emit(f"{keyword} ({_serves(writer, item.plan)}) nt_variant = {index};")
    writer.emit("nt_context_t *nt_context_entry;")
    writer.emit("int nt_status = nt_context(&nt_table, nt_kernel, nt_target, &nt_context_entry);")
    writer.emit("if (nt_status) return nt_status;")
    if writer.description.persistent:  # one program per multiprocessor, each looping
        writer.emit("if (nt_programs > nt_context_entry->multiprocessors)")
        writer.emit("nt_programs = nt_context_entry->multiprocessors;", 2)
    writer.fail(
        "UNSUPPORTED",
        "nt_programs > INT64_C(2147483647)",
        "the launch needs %lld programs; CUDA launches at most 2^31 - 1",
        "(long long)nt_programs",
    )
    writer.emit("CUfunction nt_function_handle;")
    writer.emit(
        "nt_status = nt_function(&nt_table, nt_context_entry, nt_variants, nt_variant, "
        "nt_kernel, nt_target, &nt_function_handle);"
    )
    writer.emit("if (nt_status) return nt_status;")
    writer.emit("switch (nt_variant) {")
    for index, item in enumerate(writer.compiled):
        _launch_case(writer, index, item)
    writer.emit("}")
    writer.emit('return nt_fail(NINETOOTHED_ERROR_UNSUPPORTED, "%s: no variant", nt_kernel);')


def _launch_case(writer: _Writer, index: int, item: Compiled) -> None:
    """``case index:`` the variant's kernel arguments and its launch."""
    passed, types = item.plan.passed, item.binary.parameters
    extra = types[len(passed) :]
    if len(types) < len(passed) or any(t != ".u64" for t in extra):
        raise CodegenError(
            f"{writer.label}: the compiled kernel takes parameters {types}, not the "
            f"{len(passed)} this Triton version was expected to take (and scratch pointers)"
        )
    writer.emit(f"case {index}: {{", 1)
    pointers = []
    for position, (parameter, ptx) in enumerate(zip(passed, types)):
        ctype = _C_TYPES.get(ptx)
        if ctype is None:
            raise CodegenError(f"{writer.label}: no C type for the kernel parameter type {ptx}")
        writer.emit(f"{ctype} nt_argument_{position} = ({ctype})({_value(writer, parameter)});", 2)
        pointers.append(f"&nt_argument_{position}")
    for position in range(len(passed), len(types)):
        writer.emit(f"uint64_t nt_argument_{position} = 0;  /* Triton's scratch pointer */", 2)
        pointers.append(f"&nt_argument_{position}")
    # A null entry after the last: CUDA reads only the kernel's parameters; it tells
    # tools (the tests' stand-in driver) where they end.
    writer.emit(f"void *nt_parameters[] = {{{', '.join([*pointers, 'NULL'])}}};", 2)
    writer.emit(
        f"return nt_launch(nt_function_handle, &nt_variants[{index}], nt_programs, "
        "stream, nt_parameters, nt_kernel);",
        2,
    )
    writer.emit("}", 1)


def _value(writer: _Writer, parameter: Any) -> str:
    """The C expression of a passed kernel parameter's value."""
    kind = parameter.kind
    if kind is ParameterKind.POINTER:
        tensor = writer.tensors[parameter.tensor_index]
        return f"(uintptr_t){writer.names[tensor.name]}.data"
    if kind is ParameterKind.SIZE:
        return f"nt_size_{parameter.tensor_index}_{parameter.dim}"
    if kind is ParameterKind.STRIDE:
        return f"nt_stride_{parameter.tensor_index}_{parameter.dim}"
    return writer.locals[parameter.name]  # a scalar's value


def _serves(writer: _Writer, plan: Plan) -> str:
    """The C condition under which ``plan``'s specialisation computes what the call needs."""
    variant: Variant = plan.variant
    terms = []
    passed_ints = [p for p in plan.passed if p.kind in (ParameterKind.SIZE, ParameterKind.STRIDE)]
    if not variant.wide:
        terms.append("!nt_wide")
        terms += [f"nt_fits_int32({_value(writer, p)})" for p in passed_ints]
    signature = writer.description.signature
    if variant.layout:
        terms += [writer.locals[p.name] for p in signature.of_kind(ParameterKind.LAYOUT_FLAG)]
    for name, value in plan.constants.items():
        parameter = signature.by_name[name]
        if parameter.kind is ParameterKind.SIZE_ALIGNMENT and value > 1:
            terms.append(f"{writer.locals[name]} % {value} == 0")
        elif parameter.kind is ParameterKind.STRIDE:
            terms.append(f"{_value(writer, parameter)} == 1")
    if variant.aligned:
        terms += [
            f"{_value(writer, p)} % 16 == 0" for p in plan.passed if p.kind is ParameterKind.POINTER
        ]
    if variant.divisible:
        terms += [f"{_value(writer, p)} % 16 == 0" for p in passed_ints]
    return " && ".join(terms) or "1"
