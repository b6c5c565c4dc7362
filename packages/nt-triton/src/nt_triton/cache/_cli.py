"""``ninetoothed cache info|clear``: the cache from the command line.

    ninetoothed cache info [--json]            # the root; per kind: where, files, bytes
    ninetoothed cache clear [--kind KIND ...]  # delete every kind NineToothed writes, or some

Added to the ``ninetoothed`` command by nt-triton's plugin
(:func:`nt_triton.plugin.ninetoothed_cli_commands`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ninetoothed.errors import CodegenError
from nt_triton.cache import _layout, _usage

__all__ = ["add_commands", "clear", "info"]


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``cache info`` and ``cache clear`` to the ``ninetoothed`` command."""
    cache = subparsers.add_parser(
        "cache", help="locate, size and clear NineToothed's cache", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = cache.add_subparsers(dest="cache_command", metavar="COMMAND", required=True)
    shown = commands.add_parser("info", help="the root, and per kind: where, files, bytes")
    shown.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    shown.set_defaults(handler=info)
    cleared = commands.add_parser("clear", help="delete the cache's files (every kind, or some)")
    cleared.add_argument(
        "--kind", action="append", choices=_usage.CLEARABLE,
        help="a kind to clear (repeatable; default: every kind NineToothed writes)",
    )  # fmt: skip
    cleared.set_defaults(handler=clear)


def info(arguments: argparse.Namespace) -> int:
    """Print the root and each kind's folder, files and bytes."""
    try:
        usages = _usage.info()
    except CodegenError as error:  # an unwritable NINETOOTHED_CACHE_DIR, named
        return _failed("info", error)
    if arguments.json:
        print(json.dumps({"root": str(_layout.root()), "kinds": [_entry(u) for u in usages]}))
        return 0
    print(f"root: {_layout.root()}")
    width = max(len(str(usage.files)) for usage in usages)
    for usage in usages:
        note = "  (Triton's own cache, shared: not cleared here)" if usage.kind == "triton" else ""
        print(
            f"{usage.kind:8} {usage.files:>{width}} files {usage.bytes:>12} bytes"
            f" ({_readable(usage.bytes)})  {usage.path}{note}"
        )
    return 0


def clear(arguments: argparse.Namespace) -> int:
    """Delete the chosen kinds' files; print what went, per kind."""
    try:
        removed = _usage.clear(arguments.kind)
    except CodegenError as error:
        return _failed("clear", error)
    for usage in removed:
        size = _readable(usage.bytes)
        print(f"{usage.kind}: removed {usage.files} files ({size}) from {usage.path}")
    return 0


def _failed(command: str, error: CodegenError) -> int:
    print(f"ninetoothed cache {command}: {error}", file=sys.stderr)
    return 1


def _entry(usage: _usage.Usage) -> dict[str, Any]:
    return {"kind": usage.kind, "path": str(usage.path), "files": usage.files, "bytes": usage.bytes}


def _readable(size: int) -> str:
    """``size`` bytes in the largest unit that keeps it at least 1 (``14.0 MB``)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
