"""The kernel ABI: a generated kernel's parameters, typed.

Code generation produces one :class:`KernelSignature` per kernel: the
``@triton.jit`` function's parameters in order, each a
:class:`KernelParameter` saying what it carries (a tensor's pointer, size or
stride, a scalar, a symbol the caller gives, a padded tile size, the 64-bit
flag, a layout flag, a size's alignment, or a value auto-tuning chooses).
Host code, trampolines and external launchers (jax-triton) read the
signature; none of them matches parameters by their names.

The parameters a launch passes positionally are :attr:`KernelSignature.host`
(every kind but :attr:`ParameterKind.META`), in order; the meta parameters
follow them and are passed by keyword, by auto-tuning or from pinned values.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ninetoothed.arrangement.symbol import SymbolLike

__all__ = ["KernelParameter", "KernelSignature", "ParameterKind"]


class ParameterKind(str, enum.Enum):
    """What a kernel parameter carries."""

    POINTER = "pointer"
    """A tensor's data pointer (``tensor_index`` says which tensor parameter)."""

    OFFSETS = "offsets"
    """A jagged tensor's offsets (entry ``b`` holds ``offsets[b]`` up to ``offsets[b + 1]``;
    ``tensor_index`` says which tensor parameter)."""

    SIZE = "size"
    """A tensor's size along a source dimension (``tensor_index``, ``dim``)."""

    STRIDE = "stride"
    """A tensor's stride, in elements, along a source dimension (``tensor_index``, ``dim``)."""

    SCALAR = "scalar"
    """A scalar (``Tensor(0)``) parameter's value, given positionally by the caller."""

    SYMBOL = "symbol"
    """A constexpr or run-time symbol the caller gives by keyword."""

    PADDED_SIZE = "padded_size"
    """A tile size padded to a power of two on the host (``expression`` is the size)."""

    INT64_FLAG = "int64_flag"
    """Whether some tensor's offsets need 64 bits (computed on the host)."""

    LAYOUT_FLAG = "layout_flag"
    """Whether some dimensions of a tensor lie as one contiguous block, so a flattened
    index addresses them at once (computed on the host: ``expression`` is the condition)."""

    DESCRIPTOR_FLAG = "descriptor_flag"
    """Whether a call may load and store a tensor's tiles through tensor descriptors
    (``tensor_index`` says which tensor; computed on the host, False where the launch
    cannot give the scratch memory they need: see :mod:`nt_triton._describable`)."""

    SIZE_ALIGNMENT = "size_alignment"
    """The largest power of two, at most ``cap``, dividing a size (``expression``); 1 for
    an empty dimension.  Computed on the host; tile range checks vanish where it is a
    multiple of the tile size (see ``nt_triton._codegen.divisibility``)."""

    META = "meta"
    """Chosen by auto-tuning, or pinned by the caller; a padded size derived from meta
    symbols when ``expression`` is set."""


@dataclass(frozen=True)
class KernelParameter:
    """One parameter of a generated kernel."""

    name: str
    """The parameter's name in the kernel (and, for scalars and symbols, the key
    of its value in a call's ``scalars``)."""

    kind: ParameterKind
    constexpr: bool
    """Whether the kernel takes it as ``tl.constexpr`` (a specialisation)."""

    tensor_index: int | None = None
    """For pointers, offsets, sizes and strides: the index among the tensor parameters."""

    dim: int | None = None
    """For sizes and strides: the source dimension."""

    expression: SymbolLike | None = None
    """For padded sizes (host or meta): the size that is padded; for layout flags, the
    condition; for size alignments, the size."""

    cap: SymbolLike | None = None
    """For size alignments: the largest alignment worth telling apart (a power of two)."""

    @property
    def passed_by_host(self) -> bool:
        """Whether host code passes it positionally (every kind but meta)."""
        return self.kind is not ParameterKind.META


@dataclass(frozen=True)
class KernelSignature:
    """A generated kernel's parameters, in order."""

    parameters: tuple[KernelParameter, ...]
    tensor_parameters: tuple[str, ...] = field(default=())
    """The kernel's tensor parameters' names, in order (``tensor_index`` indexes them)."""

    def __iter__(self) -> Iterator[KernelParameter]:
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    @cached_property
    def host(self) -> tuple[KernelParameter, ...]:
        """The parameters host code passes positionally, in order."""
        return tuple(p for p in self.parameters if p.passed_by_host)

    @cached_property
    def meta(self) -> tuple[KernelParameter, ...]:
        """The parameters auto-tuning (or pinned values) supply by keyword."""
        return tuple(p for p in self.parameters if not p.passed_by_host)

    @cached_property
    def by_name(self) -> Mapping[str, KernelParameter]:
        """Each parameter by its name."""
        return {p.name: p for p in self.parameters}

    def of_kind(self, kind: ParameterKind) -> tuple[KernelParameter, ...]:
        """The parameters of ``kind``, in order."""
        return tuple(p for p in self.parameters if p.kind is kind)

    @cached_property
    def pointers(self) -> tuple[KernelParameter, ...]:
        """The tensors' pointers, one per tensor parameter, in order."""
        return self.of_kind(ParameterKind.POINTER)
