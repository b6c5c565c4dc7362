"""The ``ninetoothed`` command (also ``python -m ninetoothed``).

    ninetoothed --help               # every command, the plugins' included
    ninetoothed show add.py:kernel   # a kernel's arrangement, grid and generated source
    ninetoothed cache info           # nt-triton's: the cache, sized per kind

The core defines ``show`` and ``build`` (:mod:`ninetoothed._commands`), which
act on a user's file through the public API.  Each plugin adds its own
subcommands through the hook
:meth:`~ninetoothed.runtime.hookspecs.NineToothedSpec.ninetoothed_cli_commands`,
and gives each one a ``handler`` (``parser.set_defaults(handler=function)``)
that takes the parsed arguments and returns the exit status.  A handler's
:class:`~ninetoothed._commands.CommandError` is printed as one line, prefixed
with the subcommand's ``prog`` default when it sets one, and exits with status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import ninetoothed
from ninetoothed._commands import CommandError, add_commands
from ninetoothed.runtime.plugins import plugin_manager

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command's parser, with every installed plugin's subcommands."""
    command = argparse.ArgumentParser(
        prog="ninetoothed",
        description="NineToothed's command line: the core's commands and the installed plugins'.",
    )
    command.add_argument(
        "--version", action="version", version=f"%(prog)s {ninetoothed.__version__}"
    )
    subparsers = command.add_subparsers(title="commands", metavar="COMMAND")
    add_commands(subparsers)
    plugin_manager().hook.ninetoothed_cli_commands(subparsers=subparsers)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments); returns the exit status."""
    command = parser()
    arguments = command.parse_args(argv)
    handler = getattr(arguments, "handler", None)
    if handler is None:
        command.print_help(sys.stderr)
        return 2
    try:
        status: int = handler(arguments)
    except BrokenPipeError:  # ``ninetoothed show ... | head``: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (Python flushes stdout at exit)
        return 0
    except CommandError as error:
        # The subcommand names itself (``set_defaults(prog=...)``), as argparse does.
        print(f"{getattr(arguments, 'prog', command.prog)}: {error}", file=sys.stderr)
        return 1
    return status
