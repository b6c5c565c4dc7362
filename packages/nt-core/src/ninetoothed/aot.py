"""Ahead-of-time compilation: the C interface and what a builder hands back.

``ninetoothed.make(..., caller="cuda", kernel_name=..., output_dir=...)`` and
:func:`ninetoothed.build` compile kernels into shared libraries that C and C++
programs call without Python (``docs/aot.md``).  This module holds what those
libraries and their callers share, independent of the backend that compiles:

* the common C header, ``ninetoothed.h`` (:data:`HEADER_PATH`; upstream's
  spelling :data:`_HEADER_PATH` too): ``NineToothedTensor``,
  ``NineToothedStream``, ``NineToothedResult``, the data-type enumeration,
  the status codes (:class:`Status`) and ``ninetoothed_last_error``;
* :func:`key_value`, how a variant's key value (an int, a dtype, a bool,
  ``None``, an enum) is passed to a library as a C ``int``;
* the description of a built library (:class:`CLibrary`,
  :class:`CParameter`) and of a variant to build (:class:`BuildVariant`),
  the contract between the core and an ahead-of-time builder plugin
  (:class:`ninetoothed.runtime.hookspecs.AheadOfTimeBuilder`).
"""

from __future__ import annotations

import ctypes
import enum
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ninetoothed.arrangement.dtype import DataType

if TYPE_CHECKING:
    from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = [
    "DATA_TYPES",
    "HEADER_PATH",
    "BuildVariant",
    "C_KEYWORDS",
    "CLibrary",
    "CParameter",
    "NineToothedTensor",
    "PACKED_PREFIX",
    "Status",
    "aot",
    "key_value",
]

HEADER_PATH = Path(__file__).parent / "include" / "ninetoothed.h"
"""The common C header every generated header includes (a copy lies beside each library)."""

_HEADER_PATH = HEADER_PATH
"""Upstream's name of :data:`HEADER_PATH` (C++ operator libraries include it by this path)."""

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Bool _Complex _Imaginary bool alignas alignof
    asm catch class const_cast constexpr decltype delete dynamic_cast explicit export false
    friend mutable namespace new noexcept nullptr operator private protected public
    reinterpret_cast static_assert static_cast template this thread_local throw true try
    typeid typename using virtual wchar_t""".split()
)
"""C and C++ keywords: no generated name may be one."""

PACKED_PREFIX = "ninetoothed_packed_"
"""Each generated launch function ``launch_x`` has a twin, ``ninetoothed_packed_launch_x``
(not in the headers): ``(stream, const NineToothedTensor *parameters)``, the parameters in
one array, a key's value in its ``data``.  The Python callable calls it: one pointer
crosses ``ctypes`` instead of structures by value."""

DATA_TYPES: tuple[str, ...] = (
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
"""Canonical dtype names in the order of ``enum NineToothedDataType`` (upstream's):
a dtype key value is its index here (``NINETOOTHED_FLOAT16`` is 8)."""


class NineToothedTensor(ctypes.Structure):
    """``NineToothedTensor`` of ``ninetoothed.h``, for calls through ctypes."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.POINTER(ctypes.c_uint64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
    ]


class Status(enum.IntEnum):
    """The values of ``enum NineToothedStatus``: what a launch function returns."""

    SUCCESS = 0
    NO_VARIANT = 1
    INVALID_ARGUMENT = 2
    SHAPE = 3
    UNSUPPORTED = 4
    DRIVER = 5
    NO_CONTEXT = 6
    DEVICE = 7
    LAUNCH = 8


def key_value(value: Any) -> int:
    """A variant key value as the library's C ``int`` parameter takes it.

    Ints are themselves; ``True``/``False``/``None`` are 1/0/0 (upstream's
    ``NINETOOTHED_TRUE``/``FALSE``/``NONE``); a dtype (``ninetoothed.float16``
    or its name) is its index in :data:`DATA_TYPES`; an enum member its value.
    Raises :class:`TypeError` for anything else, naming it.
    """
    if isinstance(value, bool) or value is None:
        return int(bool(value))
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        name = DataType(value).name if isinstance(value, DataType) else _dtype_name(value)
        if name in DATA_TYPES:
            return DATA_TYPES.index(name)
        raise TypeError(
            f"{value!r} is no data type a C key can name (they are {', '.join(DATA_TYPES)})"
        )
    if isinstance(value, enum.Enum) and isinstance(value.value, int):
        return value.value
    raise TypeError(
        f"a variant key value must be an int, a bool, None, a dtype or an int enum, got "
        f"{type(value).__name__} {value!r}"
    )


def _dtype_name(value: str) -> str:
    """The canonical name of a dtype spelling (``"fp16"`` -> ``"float16"``), else ``value``."""
    from ninetoothed.arrangement.dtype import canonical
    from ninetoothed.errors import MetaOperationError

    try:
        return canonical(value).name
    except MetaOperationError:
        return value


@dataclass(frozen=True)
class CParameter:
    """One parameter of a library's launch function (after the stream)."""

    name: str
    """Its name in the header."""

    kind: str
    """``"tensor"`` (a ``NineToothedTensor``), ``"scalar"`` (a ``NineToothedTensor``
    whose ``data`` points to the value, of :attr:`ctype`, in host memory),
    ``"constant"`` (a ``NineToothedTensor`` the library never reads: a scalar fixed
    when the kernel was made) or ``"key"`` (a variant key value, an ``int``)."""

    ctype: str = ""
    """For scalars: the C type of the value ``data`` points to (``"double"``,
    ``"int64_t"`` ...)."""

    ndim: int = 0
    """For tensors: the number of dimensions (``shape`` and ``strides`` entries)."""

    dtype: str = ""
    """For tensors and scalars: the canonical dtype compiled for ("" where variants differ)."""


@dataclass(frozen=True)
class CLibrary:
    """A built library: where its files are and how its launch function is called."""

    kernel_name: str
    function: str
    """The launch function's name, ``launch_<kernel_name>``."""

    parameters: tuple[CParameter, ...]
    library: Path
    header: Path
    source: Path
    built: tuple[str, ...] = ()
    """What was built, one line per variant (error messages list these)."""

    def to_json(self) -> str:
        """The description as JSON (written beside the library; :meth:`from_json`)."""
        data = asdict(self)
        for key in ("library", "header", "source"):
            data[key] = str(data[key])
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> CLibrary:
        """The description :meth:`to_json` wrote."""
        data = json.loads(text)
        return cls(
            kernel_name=str(data["kernel_name"]),
            function=str(data["function"]),
            parameters=tuple(CParameter(**p) for p in data["parameters"]),
            library=Path(data["library"]),
            header=Path(data["header"]),
            source=Path(data["source"]),
            built=tuple(data.get("built", ())),
        )


@dataclass(frozen=True)
class BuildVariant:
    """One configuration of :func:`ninetoothed.build`: a kernel and the values that select it."""

    spec: KernelSpec
    key: tuple[int | None, ...]
    """The values of the build's key parameters (as :func:`key_value` gives them); None
    where any value selects it (a compilation configuration it does not set)."""

    meta: tuple[tuple[str, Any], ...]
    """Its tuned parameters and their values (empty when nothing is tuned): the variants
    of one key differ in these, and the fastest is launched for that key."""

    label: str
    """How messages name it: ``dtype=float16, block_size=256, num_warps=4``."""

    key_label: str
    """How messages name its key: ``size=1127, dtype=float16``."""

    constants: tuple[tuple[str, Any], ...] = ()
    """Values compiled in for the constexprs a call gives (``Symbol(..., constexpr=True)``
    by name, ``Tensor(0, constexpr=True)`` by parameter name): the variant serves the
    calls that give these values.  A symbol's value is also part of :attr:`key`; a
    scalar's is read from the call's argument."""

    sizes: tuple[tuple[str, int, int], ...] = ()
    """Sizes ``(parameter, dim, size)`` the variant is compiled for: a size declared
    constexpr is compiled in (the variant serves calls of exactly that size); a
    run-time size a tile takes whole stands for the power of two it pads to (the
    variant serves the calls whose sizes pad alike; without one, every power of two
    up to the size's ``upper_bound`` is compiled)."""

    configurations: int = 1
    """How many configurations of the kernel's own tuning space (its meta symbols,
    ``num_warps``, ``num_stages``) to compile and time for this variant (1: the first,
    untimed)."""

    @property
    def fixed(self) -> tuple[Any, ...]:
        """What besides the key tells variants that serve different calls apart."""
        return (self.constants, self.sizes)


compile_annotated: Callable[..., Any] | None = None
"""What :func:`aot` calls: :func:`ninetoothed.runtime.make.aot`, which sets it when it is
imported (``import ninetoothed`` does; this module, which the runtime imports, does not
import the runtime back)."""


def aot(
    func: Any,
    caller: str = "cuda",
    kernel_name: str | None = None,
    output_dir: Any = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    *,
    target: str | int | None = None,
) -> Any:
    """Compile ``func``, annotated like an ``@ninetoothed.jit`` function, into a C library.

    Upstream's ``ninetoothed.aot.aot``: the library and Python callable that
    ``make(..., caller="cuda", kernel_name=..., output_dir=...)`` gives
    (:func:`ninetoothed.runtime.make.aot`); ``target`` is ours, as ``make``'s.
    """
    if compile_annotated is None:  # pragma: no cover - importing ninetoothed sets it
        raise RuntimeError("aot: the runtime is not loaded; import ninetoothed first")
    return compile_annotated(
        func,
        caller=caller,
        kernel_name=kernel_name,
        output_dir=output_dir,
        num_warps=num_warps,
        num_stages=num_stages,
        target=target,
    )
