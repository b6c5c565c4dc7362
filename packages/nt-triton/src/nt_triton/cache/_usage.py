"""How much each kind of the cache holds, and clearing it.

A kind's files are recognised by their names, never by their folder alone:
the root may be a folder the user chose (``NINETOOTHED_CACHE_DIR``) that
holds other files, and clearing must not touch them.  Sources are
``<stem>_<content hash>.py``, index entries ``<fingerprint>.pickle``, tuning
tables ``<kernel file stem>.json``; leftovers of interrupted atomic writes
(``.<name>.<pid>.<random>.tmp``) count with their kind.

Compiled GPU binaries are Triton's: the kind ``triton`` is Triton's own cache
folder, reported here but never cleared (every Triton program shares it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from nt_triton.cache import _layout, _memos

__all__ = ["CLEARABLE", "KINDS", "Usage", "clear", "info", "triton_directory"]

CLEARABLE = ("sources", "index", "tuning")
"""The kinds NineToothed writes, and clears."""

KINDS = (*CLEARABLE, "triton")
"""Every kind :func:`info` reports; ``triton`` is Triton's own cache (compiled binaries)."""


def _named(name: str) -> re.Pattern[str]:
    """Files whose names match ``name``, and the temporaries of their interrupted writes
    (:func:`nt_triton.cache._layout.write_atomically`)."""
    return re.compile(rf"(?:{name})|\.(?:{name})\.\d+\.[0-9a-f]+\.tmp")


_PATTERNS = {
    "sources": _named(r"[^.].*_[0-9a-f]{32}\.py"),
    "index": _named(r"[0-9a-f]+\.pickle"),
    # tmp*.tmp: what tables were written through before (tempfile.mkstemp).
    "tuning": re.compile(rf"{_named(r'[^.].*[.]json').pattern}|tmp\w+\.tmp"),
}
"""The names of each kind's files."""


class Usage(NamedTuple):
    """What one kind of the cache holds."""

    kind: str
    path: Path
    files: int
    bytes: int


def info(kinds: Iterable[str] | None = None) -> list[Usage]:
    """Files and bytes of each of ``kinds`` (None: every kind of :data:`KINDS`)."""
    return [_usage(kind, list(_files(kind))) for kind in _checked(kinds, KINDS)]


def clear(kinds: Iterable[str] | None = None) -> list[Usage]:
    """Delete the files of ``kinds`` (None: every kind of :data:`CLEARABLE`) and forget
    this process's memos of them; returns what was deleted, per kind.

    Safe while other processes use the cache: a deleted source or index entry
    is generated again when a process needs it, a deleted tuning result tuned
    again (or, with ``NINETOOTHED_TUNING=cached``, the first configuration taken).
    """
    chosen = _checked(kinds, CLEARABLE)
    removed = []
    for kind in chosen:
        count = size = 0
        for path, file_size in _files(kind):
            try:
                path.unlink()
            except FileNotFoundError:
                continue  # another process cleared it first
            count, size = count + 1, size + file_size
        removed.append(Usage(kind, _place(kind), count, size))
    _memos.forget(chosen)
    return removed


def triton_directory() -> Path:
    """Triton's cache folder, as Triton resolves it (``TRITON_CACHE_DIR``, else
    ``$TRITON_HOME/.triton/cache``, else ``~/.triton/cache``)."""
    try:
        from triton import knobs

        return Path(knobs.cache.dir)
    except (ImportError, AttributeError):  # a Triton without knobs (before 3.4)
        from triton.runtime.cache import default_cache_dir

        return Path(default_cache_dir())


def _checked(kinds: Iterable[str] | None, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """``kinds`` (None: ``allowed``), each checked against ``allowed``."""
    if kinds is None:
        return allowed
    chosen = tuple(dict.fromkeys(kinds))
    unknown = [kind for kind in chosen if kind not in allowed]
    if unknown:
        shared = "; Triton's own cache is Triton's to clear" if unknown[0] == "triton" else ""
        raise ValueError(f"cache kind {unknown[0]!r}: expected one of {', '.join(allowed)}{shared}")
    return chosen


def _place(kind: str) -> Path:
    return triton_directory() if kind == "triton" else _layout.directory(kind)


def _usage(kind: str, files: list[tuple[Path, int]]) -> Usage:
    return Usage(kind, _place(kind), len(files), sum(size for _, size in files))


def _files(kind: str) -> Iterator[tuple[Path, int]]:
    """The files of ``kind`` with their sizes (a file deleted meanwhile is skipped)."""
    place = _place(kind)
    if kind == "triton":
        yield from _walk(place)
        return
    pattern = _PATTERNS[kind]
    try:
        entries = list(os.scandir(place))
    except FileNotFoundError:
        return
    for entry in entries:
        if pattern.fullmatch(entry.name):
            try:
                if entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue


def _walk(place: Path) -> Iterator[tuple[Path, int]]:
    for folder, _, names in os.walk(place):
        for name in names:
            path = Path(folder) / name
            try:
                yield path, path.lstat().st_size
            except FileNotFoundError:
                continue
