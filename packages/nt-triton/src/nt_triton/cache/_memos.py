"""The in-process memos: every one is registered here, so it can be sized and forgotten.

Each process keeps what it loaded or computed from the cache in memory, so
that making or launching a kernel a second time costs a dict lookup.  The
memos live beside the code that fills them (they hold its types); each is
created through :func:`register`, which records it with the cache kind it
mirrors (forgetting ``index`` entries on disk forgets this process's too).
Registered today: the code objects of generated sources, the kernels kept by
fingerprint, the kernels made in this process by source file (a weak
registry, never cleared: custom operators find live kernels there), the GPU
check's compilable copies of Triton functions, and the raw launchers' factories.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

__all__ = ["Memo", "MemoSize", "forget", "register", "sizes"]

_M = TypeVar("_M", bound=MutableMapping[Any, Any])


@dataclass(frozen=True)
class Memo:
    """One registered memo."""

    name: str
    """Where it is defined (``module.NAME``)."""

    kind: str | None
    """The cache kind it mirrors (``"sources"``, ``"index"``), or None (this process's only)."""

    mapping: MutableMapping[Any, Any]

    clearable: bool
    """False for registries whose entries leave on their own (weak references)."""


class MemoSize(NamedTuple):
    """A memo's name, kind and number of entries."""

    name: str
    kind: str | None
    entries: int


_REGISTERED: list[Memo] = []


def register(mapping: _M, name: str, kind: str | None = None, *, clearable: bool = True) -> _M:
    """Record ``mapping`` as the memo ``name`` mirroring ``kind``; return it."""
    _REGISTERED.append(Memo(name, kind, mapping, clearable))
    return mapping


def sizes() -> list[MemoSize]:
    """Every registered memo's entries (memos of modules not imported yet hold none)."""
    return [MemoSize(memo.name, memo.kind, len(memo.mapping)) for memo in _REGISTERED]


def forget(kinds: Iterable[str | None] | None = None) -> None:
    """Empty the clearable memos mirroring ``kinds`` (None: every clearable memo)."""
    wanted = None if kinds is None else set(kinds)
    for memo in _REGISTERED:
        if memo.clearable and (wanted is None or memo.kind in wanted):
            memo.mapping.clear()
