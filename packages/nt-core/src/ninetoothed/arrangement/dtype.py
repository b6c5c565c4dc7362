"""Element types: the one table of dtype names every package shares.

A dtype has one **canonical name** everywhere in NineToothed: the name
PyTorch, PaddlePaddle, JAX and numpy all give it (``"float16"``,
``"bfloat16"``, ``"uint8"``, ``"float8_e4m3fn"`` …).  Adapters report tensors'
dtypes by that name (:func:`name_of`), declared dtypes are normalised to it
(:func:`canonical`), and :data:`TRITON_DTYPES` says which of them Triton
kernels take pointers to.

The module also defines the dtype constants of upstream NineToothed
(``ninetoothed.float16`` …, re-exported at the top level), usable as
``Tensor(dtype=ninetoothed.float16)`` and, in an application, wherever a
Triton dtype is expected (``ntl.cast(x, ninetoothed.float16)``).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ninetoothed.errors import DeclaredDtypeWarning, MetaOperationError, user_stacklevel

__all__ = [
    "itemsize",
    "CANONICAL_NAMES",
    "DataType",
    "TRITON_DTYPES",
    "bfloat16",
    "bool_",
    "canonical",
    "declared",
    "float16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "int16",
    "int32",
    "int64",
    "int8",
    "name_of",
    "triton_name",
    "triton_type_name",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
]

_TABLE: tuple[tuple[str, str, str], ...] = (
    # canonical name, Triton language name (tl.<name>), Triton pointer type name
    ("bool", "int1", "i1"),
    ("int8", "int8", "i8"),
    ("int16", "int16", "i16"),
    ("int32", "int32", "i32"),
    ("int64", "int64", "i64"),
    ("uint8", "uint8", "u8"),
    ("uint16", "uint16", "u16"),
    ("uint32", "uint32", "u32"),
    ("uint64", "uint64", "u64"),
    ("float16", "float16", "fp16"),
    ("bfloat16", "bfloat16", "bf16"),
    ("float32", "float32", "fp32"),
    ("float64", "float64", "fp64"),
    ("float8_e4m3fn", "float8e4nv", "fp8e4nv"),
    ("float8_e5m2", "float8e5", "fp8e5"),
)
"""Every element type NineToothed knows, with Triton's two spellings of it."""

CANONICAL_NAMES: tuple[str, ...] = tuple(row[0] for row in _TABLE)
"""The canonical names, in the table's order."""

TRITON_DTYPES: frozenset[str] = frozenset(CANONICAL_NAMES)
"""Canonical names of the dtypes Triton kernels take pointers to.

Frameworks' other dtypes (complex numbers, float8 variants for other
hardware, quantised types) have no Triton element type: a call with such a
tensor is refused before it reaches Triton."""

_TRITON_LANGUAGE_NAMES: dict[str, str] = {row[0]: row[1] for row in _TABLE}

_ALIASES: dict[str, str] = {alias: row[0] for row in _TABLE for alias in row}
"""Every accepted spelling -> canonical name (upstream NineToothed's constants
are Triton's pointer type names, ``"fp16"``)."""


class DataType(str):
    """A canonical dtype name (a ``str``), as ``ninetoothed.float16`` is.

    Comparing with the plain name works (``ninetoothed.float16 == "float16"``).
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """The canonical name, as a plain ``str``."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"ninetoothed.{self.name}"


_CONSTANTS: dict[str, DataType] = {name: DataType(name) for name in CANONICAL_NAMES}

bool_ = _CONSTANTS["bool"]
int8 = _CONSTANTS["int8"]
int16 = _CONSTANTS["int16"]
int32 = _CONSTANTS["int32"]
int64 = _CONSTANTS["int64"]
uint8 = _CONSTANTS["uint8"]
uint16 = _CONSTANTS["uint16"]
uint32 = _CONSTANTS["uint32"]
uint64 = _CONSTANTS["uint64"]
float16 = _CONSTANTS["float16"]
bfloat16 = _CONSTANTS["bfloat16"]
float32 = _CONSTANTS["float32"]
float64 = _CONSTANTS["float64"]
float8_e4m3fn = _CONSTANTS["float8_e4m3fn"]
float8_e5m2 = _CONSTANTS["float8_e5m2"]

_NAMES: dict[Any, str] = {}
"""Framework dtype object -> its name, filled as dtypes are met (``str`` is slow)."""


def name_of(framework_dtype: Any) -> str:
    """The canonical name of a framework's dtype object, as adapters report it.

    ``torch.float16``, ``paddle.float16`` (whose ``str`` is
    ``"paddle.float16"``) and ``numpy.dtype("float16")`` all give
    ``"float16"``: the part of ``str(dtype)`` after the last dot.  Dtypes with
    no Triton element type keep their framework's name (``"complex64"``).
    Memoised, since adapters ask on every call.
    """
    name = _NAMES.get(framework_dtype)
    if name is None:
        name = str(framework_dtype).rsplit(".", 1)[-1]
        _NAMES[framework_dtype] = name
    return name


def canonical(dtype: Any) -> DataType:
    """The :class:`DataType` a declared dtype stands for.

    Accepts the constants here, their names (``"float16"``, and Triton's
    ``"fp16"``), Python's ``int`` (int64) and ``bool``, ``ninetoothed.language``
    dtypes (``ntl.float16``), and frameworks' dtype objects (``torch.float16``,
    ``numpy.float16``).  Raises :class:`~ninetoothed.errors.MetaOperationError`
    for anything else, so a dtype no call could ever match is refused when the
    tensor is made.
    """
    if isinstance(dtype, DataType):
        return dtype
    if dtype is int:  # upstream programs write Tensor(1, dtype=int) for index tensors
        return _CONSTANTS["int64"]
    if dtype is float:
        raise MetaOperationError(
            "Tensor: dtype float (Python's) is ambiguous: frameworks make float32 or "
            "float64 tensors of it; use ninetoothed.float32 or ninetoothed.float64"
        )
    for spelling in _spellings(dtype):
        name = _ALIASES.get(spelling)
        if name is not None:
            return _CONSTANTS[name]
    known = ", ".join(f"ninetoothed.{name}" for name in CANONICAL_NAMES if name != "bool")
    raise MetaOperationError(
        f"Tensor: dtype {dtype} is not an element type NineToothed knows; use one of {known}, "
        "ninetoothed.dtype.bool_, or the same dtype of your framework (e.g. torch.float16)"
    )


def declared(dtype: Any) -> DataType | None:
    """A ``Tensor``'s declared dtype: :func:`canonical`, or None, with a
    :class:`~ninetoothed.errors.DeclaredDtypeWarning`, for a value that is no
    element type.

    Upstream's just-in-time kernels never read a declared dtype, and upstream
    programs pass other values there (ntops's ``max`` gives its block size), so
    such a tensor is taken as declaring none: its calls run on their arguments'
    dtypes, and ahead-of-time builds, which need one, refuse it.
    """
    try:
        return canonical(dtype)
    except MetaOperationError as error:
        warnings.warn(
            f"{error}; the tensor is taken as declaring no dtype (just-in-time calls run "
            "on their arguments' dtypes, as upstream's; ahead-of-time builds need one)",
            DeclaredDtypeWarning,
            stacklevel=user_stacklevel(),
        )
        return None


def triton_name(dtype: str) -> str:
    """The name of a canonical dtype in ``triton.language`` (``"bool"`` -> ``"int1"``)."""
    return _TRITON_LANGUAGE_NAMES[dtype]


@functools.cache
def itemsize(dtype: str) -> int:
    """Bytes per element of a canonical dtype (``"float16"`` -> 2, ``"bool"`` -> 1);
    1 for a name without a width.  Memoised: asked per call."""
    digits = "".join(c if c.isdigit() else " " for c in dtype).split()
    return max(1, int(digits[0]) // 8) if digits else 1


def triton_type_name(dtype: str) -> str:
    """Triton's name of a canonical dtype in kernel signatures (``"int32"`` -> ``"i32"``)."""
    return _TRITON_TYPE_NAMES[dtype]


_TRITON_TYPE_NAMES: dict[str, str] = {row[0]: row[2] for row in _TABLE}


def _spellings(dtype: Any) -> list[str]:
    """The names ``dtype`` may go by, most specific first."""
    spellings = []
    if isinstance(dtype, str):
        spellings.append(dtype)
    name = getattr(dtype, "name", None)
    if isinstance(name, str):  # ntl.float16, numpy.dtype
        spellings.append(name)
    spellings.append(str(dtype).rsplit(".", 1)[-1])  # torch.float16, paddle.float16
    type_name = getattr(dtype, "__name__", None)
    if isinstance(type_name, str):  # numpy.float16, jax.numpy.float16
        spellings.append(type_name)
    return spellings
