"""``swiglu``: ``output = a * silu(b)``, element-wise (the gated unit of Llama's MLP,
as upstream's examples define it), for shapes that broadcast.

It reuses the element-wise arrangement and :func:`ninetoothed.library.silu.silu`.
"""

from __future__ import annotations

from collections.abc import Sequence

import ninetoothed.language as ntl
from ninetoothed.library.silu import silu
from ninetoothed.library.tiling import Pattern, Premade, Tile, pointwise, pointwise_tensors

__all__ = ["application", "arrangement", "premake"]

arrangement = pointwise


def application(a: Tile, b: Tile, output: Tile) -> None:
    """One block of ``a * silu(b)``."""
    output = ntl.cast(a, ntl.float32) * silu(b)  # noqa: F841


def premake(patterns: Sequence[Pattern], ndim: int) -> Premade:
    """The kernel for inputs of these broadcast patterns and an ``ndim``-D output."""
    return Premade(arrangement, application, pointwise_tensors(patterns, ndim))
