"""What code generation hands on: the finished, immutable description of a kernel.

:func:`nt_triton._codegen.generate` returns one :class:`GeneratedSource`.
Every later stage reads it and nothing changes it: host code
(:mod:`nt_triton._host`) reads the signature, grid and launch checks;
auto-tuning (:mod:`nt_triton._tuning`) reads the tile footprint; the backend
writes the source to the cache and loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ninetoothed.arrangement.symbol import SymbolLike
from nt_triton._abi import KernelSignature

__all__ = ["GeneratedSource", "ShapeCheck", "SizeRequirement", "TileFootprint"]


@dataclass(frozen=True)
class TileFootprint:
    """The tiles a program holds, in terms of the symbols: what tuning prunes by."""

    tiles: tuple[tuple[SymbolLike, ...], ...]
    """Shapes of the tiles loaded and stored."""

    loop_tiles: tuple[tuple[SymbolLike, ...], ...]
    """Shapes of the tiles loaded inside loops: software pipelining keeps
    ``num_stages`` copies of each in shared memory."""

    has_loop: bool
    """Whether the application loops (more pipeline stages may pay)."""

    phases: tuple[tuple[tuple[SymbolLike, ...], ...], ...] = ()
    """Shapes of the loaded tiles live at the same time: one phase per outermost loop
    (the tiles loaded before it and in it), then the end of the program (every tile
    loaded outside loops).  Registers peak in the largest phase; a stored tile is an
    intermediate's value (tuning counts those apart).  Empty: every tile at once."""

    loop_groups: tuple[tuple[tuple[SymbolLike, ...], ...], ...] = ()
    """:attr:`loop_tiles` grouped by outermost loop: the pipeline's shared memory peaks
    in the largest group, as loops one after another do not hold their copies at
    once.  Empty: every loop tile at once."""


@dataclass(frozen=True)
class ShapeCheck:
    """At launch: the arranged ``parameter``'s outermost shape must equal the grid."""

    parameter: str
    shape: tuple[SymbolLike, ...]
    """In terms of the kernel's size and stride names (see :mod:`naming`)."""


@dataclass(frozen=True)
class SizeRequirement:
    """At launch: ``size`` must be one of ``allowed`` (a squeezed or expanded symbolic size)."""

    size: SymbolLike
    message: str
    allowed: tuple[int, ...] = (1,)
    parameter: str = ""
    """The parameter whose arrangement requires it."""


@dataclass(frozen=True)
class GeneratedSource:
    """One kernel's Triton source and everything launching it needs."""

    name: str
    """The kernel's name (the application's, or ``make(name=...)``)."""

    kernel_name: str
    """The ``@triton.jit`` function's name in :attr:`source`."""

    source: str
    """The Triton module: imports and the kernel function."""

    signature: KernelSignature
    grid: tuple[SymbolLike, ...]
    """The launch grid's shape (one program per element), in terms of sizes and meta symbols."""

    shape_checks: tuple[ShapeCheck, ...]
    requirements: tuple[SizeRequirement, ...]
    """What the host checks on concrete sizes before each launch."""

    footprint: TileFootprint
    inputs: tuple[str, ...]
    """Tensor parameters the kernel reads, in parameter order."""

    outputs: tuple[str, ...]
    """Tensor parameters the kernel writes (its outputs), in parameter order."""

    injected: Mapping[str, Any]
    """Objects the kernel refers to by module-level name (users' ``triton.jit`` helpers)."""
