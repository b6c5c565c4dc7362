"""Applying a framework's reads (:class:`ninetoothed.runtime.hookspecs.HostReads`).

The adapter's reads are expressions on one tensor, ``{}`` standing for it;
the hot function has them written in (:mod:`.hot_source`), and the miss path
applies them one at a time through :func:`reader`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["reader"]


def reader(read: str) -> Callable[[Any], Any]:
    """A function applying one of :class:`~ninetoothed.runtime.hookspecs.HostReads`'s reads
    (``{}`` the tensor)."""
    namespace: dict[str, Any] = {}
    exec(compile(f"def read(t):\n    return {read.format('t')}\n", "<read>", "exec"), namespace)  # noqa: S102
    function: Callable[[Any], Any] = namespace["read"]
    return function
