"""``bmm``: batched matrix multiplication, ``mm``'s arrangement and application on
3-D tensors (one matrix of the batch per program, along the first dimension)."""

from __future__ import annotations

from ninetoothed.library import mm
from ninetoothed.library.tiling import Premade

__all__ = ["application", "arrangement", "premake"]

arrangement = mm.arrangement
application = mm.application


def premake(tallest: int | None = None, persistent: bool = False) -> Premade:
    """The kernel for (batch, M, K) @ (batch, K, N); ``tallest`` and ``persistent`` as
    for ``mm``."""
    return mm.premake(3, tallest, persistent)
