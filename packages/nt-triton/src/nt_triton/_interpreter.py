"""Launches under Triton's interpreter: what nt-triton sets up around them.

Triton's interpreter computes bfloat16 on its raw bits; every interpreted
launch runs inside :func:`running`, which installs nt-triton's bfloat16
arithmetic (:mod:`nt_triton._interpreted_bfloat16`) for its duration only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from nt_triton import _interpreted_bfloat16 as bfloat16

__all__ = ["running"]


@contextlib.contextmanager
def running() -> Iterator[None]:
    """An interpreted launch, bfloat16 computed as on a GPU."""
    with bfloat16.patched():
        yield
