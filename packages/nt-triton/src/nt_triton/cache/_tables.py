"""Tuning results on disk: one JSON table per kernel, shared by processes.

``<root>/tuning/<kernel file stem>.json`` in the cache (:mod:`nt_triton.cache`;
the stem is the generated source's name and content hash, so an edited
kernel starts a new table) maps an entry key to the chosen configuration.  The key names the
device (its name and compute capability: an H100 and an H200 share sm_90 but
not their best tiles), the tuning key (sizes, dtypes, unit strides, keyword
symbols) and the versions of NineToothed and Triton.  Writes go through a
temporary file and an atomic rename, and a table is read, updated and
replaced under its lock (:mod:`nt_triton.cache._locks`): processes adding
entries to one table at once keep every entry (where no lock can be taken,
the last one wins).

:func:`export_table` and :func:`import_table` move every kernel's table to
another machine for deployment (``NINETOOTHED_TUNING=cached`` then never
tunes), :func:`clear` forgets them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ninetoothed.errors import CodegenError
from nt_triton import knobs
from nt_triton.cache import _layout, _locks, _usage

__all__ = ["FORMAT", "clear", "directory", "export_table", "import_table", "read", "write"]

FORMAT = 1


def directory() -> Path:
    """Where the tables live: the cache's ``tuning`` folder.

    Where no root can be written (``NINETOOTHED_CACHE_DIR`` names a read-only
    folder), the configured one: tables are read from it, and new results stay
    in memory.
    """
    try:
        return _layout.directory("tuning")
    except CodegenError:
        return knobs.cache_dir() / _layout.PLACES["tuning"]


def _path(kernel_stem: str) -> Path:
    return directory() / f"{kernel_stem}.json"


def read(kernel_stem: str) -> dict[str, Any]:
    """A kernel's entries (empty when none, or unreadable)."""
    try:
        data = json.loads(_layout.read_file(_path(kernel_stem)))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def write(kernel_stem: str, key: str, entry: Mapping[str, Any]) -> None:
    """Add one entry to a kernel's table (read, update, replace atomically, under the
    table's lock)."""
    _merge(kernel_stem, {key: dict(entry)})


def _merge(kernel_stem: str, entries: Mapping[str, Any]) -> None:
    """Add ``entries`` to a kernel's table, under its lock."""
    if not _layout.writable(directory().parent):
        return  # a read-only cache (or none): tuning results stay in memory
    with _locks.held("tuning", kernel_stem):
        merged = {**read(kernel_stem), **entries}
        _replace(_path(kernel_stem), {"format": FORMAT, "entries": merged})


def _replace(path: Path, data: Mapping[str, Any]) -> None:
    text = json.dumps(data, indent=1, sort_keys=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _layout.write_atomically(path, text.encode())
    except OSError:
        return  # an unwritable cache: tuning results stay in memory


def export_table(destination: str | os.PathLike[str]) -> int:
    """Write every kernel's tuning entries into one file; returns how many kernels."""
    tables = {}
    folder = directory()
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            entries = read(path.stem)
            if entries:
                tables[path.stem] = entries
    Path(destination).write_text(json.dumps({"format": FORMAT, "kernels": tables}, indent=1))
    return len(tables)


def import_table(source: str | os.PathLike[str]) -> int:
    """Merge a file written by :func:`export_table` into this cache; returns how many kernels."""
    data = json.loads(Path(source).read_text())
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{source}: not a NineToothed tuning table (format {FORMAT})")
    kernels = data.get("kernels", {})
    folder = directory()
    if not _layout.writable(folder.parent):
        raise PermissionError(f"{folder.parent} cannot be written: no tuning results imported")
    for stem, entries in kernels.items():
        _merge(stem, entries)
    return len(kernels)


def clear() -> None:
    """Forget every persisted tuning result (the cache's kind ``tuning``)."""
    _usage.clear(["tuning"])
