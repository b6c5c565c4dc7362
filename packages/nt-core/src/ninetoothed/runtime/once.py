"""A value made at most once per process, on first use, whichever thread asks first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Once"]

T = TypeVar("T")


class Once(Generic[T]):
    """``once()``: ``make()``'s value, made by the first call (under a lock: callers in
    other threads wait for it) and returned by every later one.

    Used for what a process decides once, such as whether a C extension builds: the
    value may be None, which is remembered like any other."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self.values: list[T] = []
        """``[]`` until decided, then ``[value]`` (a test may set it)."""

    def __call__(self) -> T:
        """The value, made now if not yet."""
        if self.values:
            return self.values[0]
        with self._lock:
            if not self.values:
                self.values.append(self._make())
        return self.values[0]

    def offer(self, value: T) -> None:
        """Take ``value`` as the decision, unless one is made already."""
        with self._lock:
            if not self.values:
                self.values.append(value)
