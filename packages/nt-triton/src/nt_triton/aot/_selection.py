"""Which specialisation a call launches, and the launch itself, in C.

After the host code's checks (:mod:`._launcher`), the launch function takes
the first specialisation (:mod:`._variants`) whose assumptions the call's
values meet, finds its function in the current context and launches it
with the parameters that specialisation takes.  Where the library was
compiled for some padded sizes only (:mod:`._buckets`), a call none serves
is refused with what was built.
"""

from __future__ import annotations

from typing import Any

from ninetoothed.errors import CodegenError
from nt_triton.aot._buckets import run_time_padded
from nt_triton.aot._variants import Plan, Variant
from nt_triton.aot._writer import Compiled, Writer
from nt_triton.description import ParameterKind

__all__ = ["emit_launch"]

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


def emit_launch(writer: Writer) -> None:
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
    _choose(writer)
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


def _choose(writer: Writer) -> None:
    """``nt_variant``: the first specialisation that serves the call.  The last of a
    chain serves every call of its padded sizes; a call whose padded sizes no chain
    was compiled for is refused, listing those built."""
    padded = [p.name for p in run_time_padded(writer.description, writer.given)]
    compiled = writer.compiled if padded else writer.compiled[:-1]
    writer.emit(f"int nt_variant = {-1 if padded else 'NT_VARIANT_COUNT - 1'};")
    for index, item in enumerate(compiled):
        keyword = "if" if index == 0 else "else if"
        writer.emit(f"{keyword} ({_serves(writer, item.plan)}) nt_variant = {index};")
    if not padded:
        return
    built = sorted({tuple(item.plan.padded[n] for n in padded) for item in writer.compiled})
    values = ", ".join("%lld" for _ in padded)
    writer.fail(
        "NO_VARIANT",
        "nt_variant < 0",
        f"the call's tiles as large as a dimension pad to ({', '.join(padded)}) = ({values}), "
        f"but the library was compiled for {', '.join(map(str, built))} only",
        *(f"(long long){writer.locals[name]}" for name in padded),
    )


def _launch_case(writer: Writer, index: int, item: Compiled) -> None:
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


def _value(writer: Writer, parameter: Any) -> str:
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


def _serves(writer: Writer, plan: Plan) -> str:
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
    terms += [f"{writer.locals[name]} == {value}" for name, value in plan.padded.items()]
    for name, value in plan.constants.items():
        parameter = signature.by_name[name]
        if parameter.kind is ParameterKind.SIZE_ALIGNMENT and value > 1:
            terms.append(f"{writer.locals[name]} % {value} == 0")
        elif parameter.kind is ParameterKind.STRIDE:
            terms.append(f"{_value(writer, parameter)} == 1")
    # Divisibility the specialisation was compiled with (Triton's alignment facts), but
    # not the sizes its tile checks above already imply.
    divisible = []
    if variant.aligned:
        divisible += [p for p in plan.passed if p.kind is ParameterKind.POINTER]
        divisible += [p for p in passed_ints if p.kind is ParameterKind.STRIDE]
    if variant.divisible:
        divisible += [
            p for p in passed_ints if p.kind is ParameterKind.SIZE and p.name not in plan.implied
        ]
    terms += [f"{_value(writer, p)} % 16 == 0" for p in divisible]
    return " && ".join(terms) or "1"
