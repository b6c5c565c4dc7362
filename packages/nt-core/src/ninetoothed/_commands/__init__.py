"""The ``ninetoothed`` command's own subcommands, on the core's public API.

``show`` describes a kernel a file makes (:mod:`.show`) and ``build`` builds
a C library with :func:`ninetoothed.build` (:mod:`.build`); both name what
they act on as ``FILE:NAME`` (:mod:`.loading`).  Plugins add theirs through
the ``ninetoothed_cli_commands`` hook (nt-triton: ``cache`` and ``tune``).
"""

from __future__ import annotations

import argparse

from ninetoothed._commands import build, show
from ninetoothed._commands.loading import CommandError

__all__ = ["CommandError", "add_commands"]


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``show`` and ``build`` to the ``ninetoothed`` command."""
    show.add_command(subparsers)
    build.add_command(subparsers)
