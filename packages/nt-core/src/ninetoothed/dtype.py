"""Upstream NineToothed's module path of the dtype constants (``ninetoothed.dtype.float16`` …).

The element types are defined in :mod:`ninetoothed.arrangement.dtype`; this
module keeps upstream's ``ninetoothed.dtype`` working, with ``bool_`` and the
float8 types beside upstream's constants.
"""

from ninetoothed.arrangement.dtype import (
    bfloat16,
    bool_,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ = [
    "bfloat16",
    "bool_",
    "float16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
