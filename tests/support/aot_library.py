"""Calling the kernel library's C API (``libninetoothed_ops.so``) through ctypes."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ninetoothed.aot import DATA_TYPES
from support.aot import contiguous

CONSUMER = Path(__file__).with_name("ops_consumer")
"""The C++ consumer's CMake project."""


class OpsTensor(ctypes.Structure):
    """``NineToothedOpsTensor`` of ``ninetoothed_ops.h``."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_uint64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("dtype", ctypes.c_int),
    ]


def ops_tensor(
    data: int,
    shape: Sequence[int],
    strides: Sequence[int] | None = None,
    dtype: str = "float16",
) -> OpsTensor:
    """An ``NineToothedOpsTensor`` (contiguous strides unless given)."""
    strides = contiguous(shape) if strides is None else strides
    ndim = len(shape)
    return OpsTensor(
        data,
        ndim,
        (ctypes.c_uint64 * max(ndim, 1))(*shape),
        (ctypes.c_int64 * max(ndim, 1))(*strides),
        DATA_TYPES.index(dtype),
    )


class Ops:
    """The library's functions: ``ops.add(*arguments)`` returns (status, message)."""

    def __init__(self, library: Path) -> None:
        self.handle = ctypes.CDLL(str(library))
        self.handle.ninetoothed_last_error.restype = ctypes.c_char_p

    def __getattr__(self, op: str) -> Any:
        function = getattr(self.handle, f"ninetoothed_ops_{op}")

        def call(*arguments: Any) -> tuple[int, str]:
            converted = [ctypes.c_double(a) if isinstance(a, float) else a for a in arguments]
            status = int(function(ctypes.c_void_p(0), *converted))
            message = self.handle.ninetoothed_last_error().decode() if status else ""
            return status, message

        return call
