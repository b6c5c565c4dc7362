"""``add``: ``output = input + other``, element-wise, for shapes that broadcast.

The arrangement is the library's element-wise one (:func:`~ninetoothed.library.tiling.pointwise`):
one block of elements per program, every input broadcast to the output.  The
sum is taken in float32 and rounded once, on the store.
"""

from __future__ import annotations

from collections.abc import Sequence

import ninetoothed.language as ntl
from ninetoothed.library.tiling import Pattern, Premade, Tile, pointwise, pointwise_tensors

__all__ = ["application", "arrangement", "premake"]

arrangement = pointwise


def application(input: Tile, other: Tile, output: Tile) -> None:
    """One block: the sum of the inputs' blocks."""
    output = ntl.cast(input, ntl.float32) + ntl.cast(other, ntl.float32)  # noqa: F841


def premake(patterns: Sequence[Pattern], ndim: int) -> Premade:
    """The kernel for inputs of these broadcast patterns and an ``ndim``-D output."""
    return Premade(arrangement, application, pointwise_tensors(patterns, ndim))
