"""The parameters a compiled kernel takes, as the lean launcher fills them.

Triton 3.6's launcher (``make_launcher`` in its NVIDIA driver) passes a
compiled kernel, in signature order, every parameter whose type is not
``constexpr`` (constexpr arguments and ints specialised to 1 are compiled
in), then two pointers it appends to every kernel: the global scratch and the
profile scratch (null where the kernel needs none).  Each parameter has its
C type: pointers are 64-bit addresses, ``i8``…``i64`` and ``u1``…``u64``
integers of their width, ``fp16``/``bf16`` 16-bit floats (``bf16`` truncated
from ``fp32``), ``fp32`` and ``fp64`` floats.  Triton 3.9's generic launcher
follows the same rules.  A host tensor descriptor that Triton lowered to a TMA
descriptor (``tensordesc<...>`` with its ``tensordesc_meta``) becomes the 128-byte
map, then its sizes (``i32``) and strides (``i64``): the map is encoded per call
from its address (:class:`TensorMap` says how), the sizes and strides are bound.
Other kinds (tuples, descriptors lowered to pointers) are not laid out here:
their kernels take Triton's own launcher.

:func:`parameter_layout` turns a specialised signature and which arguments are
passed per call into the lean launcher's layout: 8 bytes a parameter with the
constant ones packed, and where each per-call value goes with its type code
(``lean_launch.c`` lists the codes).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CODES", "SCRATCH_POINTERS", "Layout", "TensorMap", "pack", "parameter_layout"]

CODES: dict[str, str] = {
    "i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "Q",
    "fp16": "e", "bf16": "E", "fp32": "f", "f32": "f", "fp64": "d",
}  # fmt: skip
"""Triton's scalar types and the launcher's type codes (pointers: ``"p"``)."""

SCRATCH_POINTERS = 2
"""The pointers Triton 3.6 appends to every kernel's parameters (global, profile scratch)."""

_SIGNED = {"b": 8, "h": 16, "i": 32, "q": 64}
_UNSIGNED = {"B": 8, "H": 16, "I": 32, "Q": 64}


@dataclass(frozen=True)
class TensorMap:
    """One tensor-descriptor parameter as the lean launcher encodes its TMA map per call
    (``cuTensorMapEncodeTiled``'s arguments but the address), and the sizes and strides
    Triton passes after the map."""

    data_type: int
    """The driver's ``CUtensorMapDataType``."""
    swizzle: int
    """The driver's ``CUtensorMapSwizzle``."""
    fill: int
    """The driver's ``CUtensorMapFloatOOBfill``: 1 (NaN) for descriptors padded with NaN."""
    element_size: int
    """Bytes per element."""
    shape: tuple[int, ...]
    """The tensor's sizes, outermost first."""
    strides: tuple[int, ...]
    """Its strides in elements, outermost first (the last one is 1)."""
    block: tuple[int, ...]
    """The box one copy moves, outermost first."""

    def encoding(self) -> tuple[int, int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``(type, swizzle, fill, sizes, strides, box)`` as the driver takes them: innermost
        dimension first, the strides of the outer dimensions in bytes."""
        sizes = tuple(reversed(self.shape))
        strides = tuple(self.element_size * stride for stride in reversed(self.strides[:-1]))
        box = tuple(reversed(self.block))
        return (self.data_type, self.swizzle, self.fill, sizes, strides, box)


@dataclass(frozen=True)
class Layout:
    """What ``Launch`` takes besides the kernel, grid and block."""

    constants: bytes
    """8 bytes per kernel parameter: the bound ones packed, the per-call ones zero."""
    slots: tuple[tuple[int, int, str], ...]
    """``(parameter, per-call value, type code)`` for each per-call value the kernel takes."""
    arity: int
    """Per-call values a launch is called with (some may be compiled in and unused)."""
    maps: tuple[tuple[Any, ...], ...] = ()
    """``(parameter, per-call address, type, swizzle, fill, sizes, strides, box)`` for each
    tensor-map parameter (:meth:`TensorMap.encoding`)."""


def code_of(triton_type: str) -> str | None:
    """The type code of a Triton parameter type, or None where it is no plain scalar or pointer."""
    if triton_type.startswith("*"):
        return "p"
    return CODES.get(triton_type)


def pack(code: str, value: Any) -> bytes:
    """``value`` in 8 bytes as the launcher passes a ``code`` parameter (zero-filled).

    Integers are range-checked where Triton's launcher checks them (signed
    types: :class:`OverflowError`) and truncated where it truncates (unsigned
    ones); floats are rounded to the type, out-of-range ``fp32`` to infinity.
    """
    if code == "p":
        return struct.pack("<Q", int(value))
    if code in _SIGNED:
        bits = _SIGNED[code]
        number = int(value)
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise OverflowError(f"{number} does not fit an i{bits} parameter")
        return struct.pack("<Q", number & ((1 << bits) - 1))
    if code in _UNSIGNED:
        return struct.pack("<Q", int(value) & ((1 << _UNSIGNED[code]) - 1))
    real = float(value)
    if code == "d":
        return struct.pack("<d", real)
    single = _to_fp32(real)
    if code == "f":
        return single + bytes(4)
    if code == "E":
        return single[2:4] + bytes(6)
    return struct.pack("<e", real) + bytes(6)


def _to_fp32(number: float) -> bytes:
    """``number`` rounded to fp32, as C's ``(float)`` cast does (infinity past the range)."""
    try:
        return struct.pack("<f", number)
    except OverflowError:
        return struct.pack("<f", float("inf") if number > 0 else float("-inf"))


def parameter_layout(
    signature: Sequence[str],
    order: Sequence[str],
    bound: Sequence[Any],
    maps: Sequence[TensorMap] = (),
) -> Layout | None:
    """The layout of a kernel compiled for ``signature``, or None where it has no plain one.

    ``signature`` holds each kernel argument's Triton type (``"*fp16"``,
    ``"i32"``, ``"constexpr"``, …) in order; ``order`` says per argument
    whether it is the ``i``-th per-call value (``"p<i>"``) or the ``j``-th
    of ``bound`` (``"a<j>"``), as :func:`nt_triton._launch.compiled.launch_factory`
    takes it.  ``maps`` describes each tensor-descriptor argument in order; its
    per-call value is the tensor's address (a bound descriptor has no layout).
    """
    if len(signature) != len(order):
        raise ValueError(f"{len(signature)} signature types for {len(order)} arguments")
    constants: list[bytes] = []
    slots: list[tuple[int, int, str]] = []
    arity = sum(1 for token in order if token.startswith("p"))
    placed: list[tuple[Any, ...]] = []
    for triton_type, token in zip(signature, order):
        if triton_type == "constexpr":
            continue
        if isinstance(triton_type, str) and triton_type.startswith("tensordesc"):
            if len(placed) == len(maps) or not token.startswith("p"):
                return None
            described = maps[len(placed)]
            placed.append((len(constants), int(token[1:]), *described.encoding()))
            constants.append(bytes(8))  # the map: encoded per call
            try:
                constants.extend(pack("i", size) for size in described.shape)
                constants.extend(pack("q", stride) for stride in described.strides)
            except OverflowError:
                return None  # Triton's launcher reports it
            continue
        code = code_of(triton_type) if isinstance(triton_type, str) else None
        if code is None:
            return None
        index = int(token[1:])
        if token.startswith("p"):
            slots.append((len(constants), index, code))
            constants.append(bytes(8))
        else:
            try:
                constants.append(pack(code, bound[index]))
            except (OverflowError, TypeError, ValueError):
                return None  # Triton's launcher reports it, as it would without us
    if len(placed) != len(maps):
        return None
    constants.extend(bytes(8) for _ in range(SCRATCH_POINTERS))
    return Layout(b"".join(constants), tuple(slots), arity, tuple(placed))
