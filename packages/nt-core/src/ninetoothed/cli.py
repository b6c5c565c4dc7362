"""The ``ninetoothed`` command (also ``python -m ninetoothed``).

    ninetoothed --help           # the commands the installed plugins add
    ninetoothed cache info       # for example: nt-triton's cache, sized per kind

The core defines no command of its own: each plugin adds its subcommands
through the hook :meth:`~ninetoothed.runtime.hookspecs.NineToothedSpec.ninetoothed_cli_commands`,
and gives each one a ``handler`` (``parser.set_defaults(handler=function)``)
that takes the parsed arguments and returns the exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import ninetoothed
from ninetoothed.runtime.plugins import plugin_manager

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command's parser, with every installed plugin's subcommands."""
    command = argparse.ArgumentParser(
        prog="ninetoothed", description="NineToothed's command line: commands come from plugins."
    )
    command.add_argument(
        "--version", action="version", version=f"%(prog)s {ninetoothed.__version__}"
    )
    subparsers = command.add_subparsers(title="commands", metavar="COMMAND")
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
    status: int = handler(arguments)
    return status
