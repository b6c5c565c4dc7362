"""A mapping to the newest object still alive under each key, several per key.

Kernels are found by their cached source file (the generic PyTorch operator
names a kernel by that path).  Several kernel objects can share one file: the
same definition made again (a test's fresh library kernels, a second ``make``
reusing the source).  A plain ``WeakValueDictionary`` keeps only the last one
stored, and loses the entry when that one is freed while an older one, still
in use, could have served.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, MutableMapping
from typing import Generic, TypeVar

__all__ = ["NewestAlive"]

_V = TypeVar("_V")


class NewestAlive(MutableMapping[str, _V], Generic[_V]):
    """``key -> the most recently stored value that is still alive``; holds values
    weakly, so it keeps no object alive."""

    def __init__(self) -> None:
        self._references: dict[str, list[weakref.ref[_V]]] = {}

    def __setitem__(self, key: str, value: _V) -> None:
        kept = [r for r in self._references.get(key, ()) if r() is not None and r() is not value]
        kept.append(weakref.ref(value))
        self._references[key] = kept

    def __getitem__(self, key: str) -> _V:
        for reference in reversed(self._references.get(key, ())):
            value = reference()
            if value is not None:
                return value
        raise KeyError(key)

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018 - a KeyError when nothing under ``key`` lives
        del self._references[key]

    def __iter__(self) -> Iterator[str]:
        return iter([key for key in list(self._references) if key in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        references = self._references.get(key, ()) if isinstance(key, str) else ()
        return any(reference() is not None for reference in references)
