"""The launcher's refusal of arguments that share memory a kernel writes, in C.

The just-in-time host refuses a written tensor that overlaps itself or
another argument (:class:`ninetoothed.runtime.aliasing.Aliasing`); the C
launcher refuses the same calls, from the same description (which
parameters are written, which pairs may be one view) and with the same
messages (:meth:`Aliasing.overlapping_output_message` and its siblings,
filled by ``printf``).  The element sizes are the declared dtypes': a C
library is compiled for them.  Status: ``NINETOOTHED_ERROR_SHAPE`` for an
output overlapping itself (a layout), ``NINETOOTHED_ERROR_INVALID_ARGUMENT``
for arguments sharing memory.
"""

from __future__ import annotations

from ninetoothed.arrangement.dtype import itemsize
from ninetoothed.errors import CodegenError
from ninetoothed.runtime.aliasing import Aliasing
from nt_triton.aot._writer import Writer

__all__ = ["MAX_DIMS", "emit_aliasing"]

MAX_DIMS = 64
"""The most dimensions a tensor of a C library may have (the self-overlap test sorts
them in a fixed array)."""

_FIELD = "\x00"
"""Stands for a ``%s`` while a message is made printf-safe."""


def _format(text: str) -> str:
    """``text`` (with :data:`_FIELD` for each value) as a printf format."""
    return text.replace("%", "%%").replace(_FIELD, "%s")


def _layout(t: int) -> tuple[str, str]:
    """The C expressions writing tensor ``t``'s shape and strides as Python tuples."""
    return (
        f"nt_tuple(nt_text_{t}_shape, sizeof nt_text_{t}_shape, nt_sizes_{t}, nt_rank_{t})",
        f"nt_tuple(nt_text_{t}_strides, sizeof nt_text_{t}_strides, nt_strides_{t}, nt_rank_{t})",
    )


def emit_aliasing(writer: Writer, outputs: tuple[str, ...]) -> None:
    """Emit the checks of a call's written tensors (see the module docstring)."""
    spec = writer.spec
    aliasing = Aliasing.of(spec, outputs)
    if not aliasing.written:
        return
    assert not aliasing.skipped, "C libraries refuse jagged tensors"
    unused = set(writer.unused)
    involved = sorted(
        {t for pair in aliasing.pairs for t in pair if not unused & set(pair)}
        | (aliasing.written - unused)
    )
    for t in involved:
        _arrays(writer, t)
    for w in sorted(aliasing.written - unused):
        _itself(writer, aliasing, w)
    for w, o in aliasing.pairs:
        if w not in unused and o not in unused:
            _pair(writer, aliasing, w, o)


def _arrays(writer: Writer, t: int) -> None:
    """Tensor ``t``'s sizes, strides, rank and span as locals."""
    source = writer.tensors[t].source
    ndim = source.ndim
    if ndim > MAX_DIMS:
        raise CodegenError(
            f"{writer.label}: parameter {writer.tensors[t].name!r} has {ndim} dimensions; "
            f"C libraries take tensors of at most {MAX_DIMS}"
        )
    if ndim:
        sizes = ", ".join(f"nt_size_{t}_{d}" for d in range(ndim))
        strides = ", ".join(f"nt_stride_{t}_{d}" for d in range(ndim))
        writer.emit(
            f"const int64_t nt_sizes_{t}[] = {{{sizes}}}, nt_strides_{t}[] = {{{strides}}};"
        )
    else:
        writer.emit(f"const int64_t *nt_sizes_{t} = NULL, *nt_strides_{t} = NULL;")
    writer.emit(f"const int nt_rank_{t} = {ndim};")
    data = f"{writer.names[writer.tensors[t].name]}.data"
    width = itemsize(source.dtype.name)
    writer.emit(
        f"const nt_span_t nt_span_{t} = nt_span({data}, nt_sizes_{t}, nt_strides_{t}, "
        f"nt_rank_{t}, {width});"
    )
    writer.emit(f"(void)nt_sizes_{t}; (void)nt_strides_{t}; (void)nt_rank_{t}; (void)nt_span_{t};")


def _buffers(writer: Writer, tensors: tuple[int, ...]) -> None:
    """Text buffers for the layouts of ``tensors`` (inside a failing branch's block)."""
    for t in tensors:
        writer.emit(f"char nt_text_{t}_shape[512], nt_text_{t}_strides[512];", 2)


def _itself(writer: Writer, aliasing: Aliasing, w: int) -> None:
    """Refuse written tensor ``w`` overlapping itself."""
    arrays = f"nt_sizes_{w}, nt_strides_{w}, nt_rank_{w}"
    writer.emit(f"if (nt_overlaps_itself({arrays})) {{")
    _buffers(writer, (w,))
    for stride_zero, condition in ((True, f"nt_stride_zero({arrays})"), (False, "1")):
        text = aliasing.overlapping_output_message(w, _FIELD, _FIELD, stride_zero)
        writer.fail("SHAPE", condition, _format(text), *_layout(w), depth=2)
    writer.emit("}")


def _pair(writer: Writer, aliasing: Aliasing, w: int, o: int) -> None:
    """Refuse written tensor ``w`` sharing memory with ``o``, unless one view may be."""
    first, second = writer.tensors[w].source, writer.tensors[o].source
    alike = first.ndim == second.ndim and first.dtype == second.dtype
    same_view = (
        f"{writer.names[writer.tensors[w].name]}.data == "
        f"{writer.names[writer.tensors[o].name]}.data && nt_same_layout(nt_sizes_{w}, "
        f"nt_strides_{w}, nt_sizes_{o}, nt_strides_{o}, nt_rank_{w})"
        if alike
        else "0"
    )
    writer.emit(f"if (nt_spans_meet(nt_span_{w}, nt_span_{o})) {{")
    if (min(w, o), max(w, o)) in aliasing.in_place:
        writer.emit(f"const int nt_in_place = {same_view};", 2)
    else:
        writer.emit("const int nt_in_place = 0;", 2)
        if o not in aliasing.written:
            text = _format(aliasing.not_in_place_message(w, o))
            writer.fail("INVALID_ARGUMENT", same_view, text, depth=2)
    _buffers(writer, (w, o))
    text = aliasing.shared_message(w, o, {w: (_FIELD, _FIELD), o: (_FIELD, _FIELD)})
    values = [value for t in sorted((w, o)) for value in _layout(t)]
    writer.fail("INVALID_ARGUMENT", "!nt_in_place", _format(text), *values, depth=2)
    writer.emit("}")
