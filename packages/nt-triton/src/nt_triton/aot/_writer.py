"""The writer of a launch function's C text, and what its parts share.

:class:`Writer` holds one kernel's description, its compiled specialisations
and the C names of what the launch function computes; :mod:`._launcher`
(the host code's checks and values), :mod:`._aliasing` (memory written
tensors share) and :mod:`._selection` (the choice of specialisation and the
launch) write through it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ninetoothed.arrangement.symbol import SymbolLike
from ninetoothed.errors import CodegenError
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton.aot._cexpr import to_c
from nt_triton.aot._compile import Binary
from nt_triton.aot._variants import Plan
from nt_triton.description import KernelDescription, size_name, stride_name

__all__ = ["Compiled", "Writer", "c_bytes", "c_names", "c_string"]


@dataclass(frozen=True)
class Compiled:
    """One specialisation, compiled."""

    plan: Plan
    binary: Binary


def c_string(text: str) -> str:
    """``text`` as a C string literal (JSON's escapes are C's for these characters)."""
    return json.dumps(text, ensure_ascii=True).replace("?", "\\?")


_PLAIN = frozenset(range(0x20, 0x7F)) - {ord('"'), ord("\\"), ord("?")}
"""Bytes written as themselves in a C string literal (printable ASCII but the quote,
the backslash and ``?``, which could start a trigraph)."""


def c_bytes(data: bytes, width: int = 96) -> str:
    """``data`` as adjacent C string literals, one per line, for a ``char`` array of
    exactly ``len(data)`` elements (C keeps no terminating NUL when the size leaves no
    room for one).  Compilers parse megabytes of string literal far faster than an
    initializer list of as many integers: the kernel library's C took minutes.
    Octal escapes are always three digits, so a following digit never joins one."""
    if not data:
        return '""'
    lines = []
    for start in range(0, len(data), width):
        chunk = data[start : start + width]
        text = "".join(chr(b) if b in _PLAIN else f"\\{b:03o}" for b in chunk)
        lines.append(f'"{text}"')
    return "\n    ".join(lines)


def c_names(spec: KernelSpec) -> list[str]:
    """The launch function's parameter names: the application's, one made safe where
    it is a C or C++ keyword."""
    from ninetoothed.aot import C_KEYWORDS

    return [p.name + "_" if p.name in C_KEYWORDS else p.name for p in spec.parameters]


class Writer:
    """Writes one launch function (see the module docstring)."""

    def __init__(
        self,
        description: KernelDescription,
        compiled: Sequence[Compiled],
        label: str,
        target: str,
        given: Mapping[str, Any],
    ) -> None:
        self.description = description
        self.given = dict(given)
        """Values compiled in for the constexprs a call gives (symbols, scalars)."""
        self.spec = description.spec
        self.compiled = compiled
        self.label = label
        self.target = target
        self.lines: list[str] = []
        self.tensors = self.spec.tensor_parameters
        self.names = dict(zip((p.name for p in self.spec.parameters), c_names(self.spec)))
        fixed = {p.name: p.source.value for p in self.spec.scalar_parameters if p.source.constexpr}
        self.unused = self.spec.unused_parameters({**fixed, **self.given})
        self.locals: dict[str, str] = {}
        for t, parameter in enumerate(self.tensors):
            for d in range(parameter.source.ndim):
                self.locals[size_name(parameter.name, d)] = f"nt_size_{t}_{d}"
                self.locals[stride_name(parameter.name, d)] = f"nt_stride_{t}_{d}"
        for name, value in description.meta.items():
            self.locals[name] = f"INT64_C({int(value)})"
        for name in self.spec.constexpr_symbols:  # compiled in: the library's values
            if name in self.given:
                self.locals[name] = f"INT64_C({int(self.given[name])})"

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
