"""``silu``: ``output = input * sigmoid(input)``, element-wise, in float32.

:func:`silu` is the helper the application calls (inlined into the kernel);
``swiglu`` calls it too.
"""

from __future__ import annotations

from collections.abc import Sequence

import ninetoothed.language as ntl
from ninetoothed.library.tiling import Pattern, Premade, Tile, pointwise, pointwise_tensors

__all__ = ["application", "arrangement", "premake", "silu"]

arrangement = pointwise


def silu(value: Tile) -> Tile:
    """``value * sigmoid(value)`` in float32."""
    # A fresh name: assigning to a helper's parameter would assign to the caller's.
    as_float = ntl.cast(value, ntl.float32)
    return as_float * ntl.sigmoid(as_float)


def application(input: Tile, output: Tile) -> None:
    """One block of ``silu(input)``."""
    output = silu(input)  # noqa: F841


def premake(patterns: Sequence[Pattern], ndim: int) -> Premade:
    """The kernel for an input of this broadcast pattern and an ``ndim``-D output."""
    return Premade(arrangement, application, pointwise_tensors(patterns, ndim))
