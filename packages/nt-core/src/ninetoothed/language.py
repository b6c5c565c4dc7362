"""``ninetoothed.language`` (``ntl``): the operations an application may call.

Every name here stands for the Triton operation of the same name
(``ntl.zeros`` → ``triton.language.zeros``, ``ntl.float16`` →
``triton.language.float16``); ``ntl.libdevice.<name>`` stands for Triton's
libdevice (``triton.language.extra.libdevice``).  One exception, as newer
upstream: ``ntl.exp`` and ``ntl.exp2`` compute float16 and bfloat16 operands
in float32, and their results are float32 (Triton's take float32 and float64
only).  Names not listed below are
reachable too: any attribute of this module refers to the Triton name it
spells.  The core never imports Triton: these are references the code
generator resolves when it writes the kernel, so calling them outside a
kernel's application is an error.
"""

from __future__ import annotations

from typing import Any


class LanguageReference:
    """A reference to a Triton language object by its dotted path."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def __getattr__(self, name: str) -> LanguageReference:
        if name.startswith("__"):
            raise AttributeError(name)
        return LanguageReference(f"{self.path}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{self.path} can only be used inside a kernel's application, "
            "where the code generator turns it into Triton code"
        )

    def __repr__(self) -> str:
        return self.path.replace("triton.language", "ninetoothed.language", 1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanguageReference) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    @property
    def name(self) -> str:
        """The last component of the path, e.g. ``float16``."""
        return self.path.rsplit(".", 1)[-1]


TRITON_LANGUAGE = "triton.language"
"""The Triton module the listed names refer into."""
LIBDEVICE = "triton.language.extra.libdevice"
"""The Triton module ``ntl.libdevice`` refers to."""

libdevice = LanguageReference(LIBDEVICE)
"""Triton's libdevice math functions (``ntl.libdevice.tanh`` …)."""

_LISTED = (
    "zeros full arange dot trans exp exp2 log log2 sqrt rsqrt sigmoid softmax max min sum "
    "argmax argmin maximum minimum where cast abs cos sin fma floor ceil clamp cumsum "
    "reshape view broadcast_to expand_dims permute join split rand randn randint atomic_add "
    "atomic_max atomic_min atomic_cas atomic_xchg program_id num_programs static_range "
    "float8e4nv float8e5 float16 bfloat16 float32 float64 int1 int8 int16 int32 int64 uint8 "
    "uint16 uint32 uint64 constexpr"
).split()

for _name in _LISTED:
    globals()[_name] = LanguageReference(f"{TRITON_LANGUAGE}.{_name}")
del _name

__all__ = ["LIBDEVICE", "TRITON_LANGUAGE", "LanguageReference", "libdevice", *_LISTED]


def __getattr__(name: str) -> LanguageReference:
    """Any other Triton language name, e.g. ``ntl.erf``."""
    if name.startswith("__"):
        raise AttributeError(name)
    return LanguageReference(f"{TRITON_LANGUAGE}.{name}")
