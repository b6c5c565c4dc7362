"""``ninetoothed tune export|import``: tuning results between machines, from the shell.

    ninetoothed tune export FILE   # every kernel's tuning results, into one file
    ninetoothed tune import FILE   # merge such a file into this machine's cache

Deployment without tuning: export on a machine of the same GPU model and
versions, import on the target, run with ``NINETOOTHED_TUNING=cached``
(docs/tuning.md).  ``ninetoothed cache info`` shows where the results live and
``ninetoothed cache clear --kind tuning`` forgets them.  Added to the
``ninetoothed`` command by nt-triton's plugin; ``python -m nt_triton.tuner``
runs the same commands.
"""

from __future__ import annotations

import argparse
import sys

from nt_triton.cache import _tables as table

__all__ = ["add_commands", "add_transfers", "export", "import_"]

DESCRIPTION = """\
Move tuning results between machines: export them on a machine of the same
GPU model and versions, import them on the target, and run there with
NINETOOTHED_TUNING=cached (use the imported results, never tune).
`ninetoothed cache info` shows where the results live; `ninetoothed cache
clear --kind tuning` forgets them.
"""


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tune export`` and ``tune import`` to the ``ninetoothed`` command."""
    tune = subparsers.add_parser(
        "tune", help="export and import tuning results (deployment without tuning)",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = tune.add_subparsers(dest="tune_command", metavar="{export,import}", required=True)
    add_transfers(commands)


def add_transfers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``export FILE`` and ``import FILE`` to a command's subcommands."""
    exported = commands.add_parser("export", help="write every kernel's tuning results to FILE")
    exported.add_argument("file", metavar="FILE")
    exported.set_defaults(handler=export, prog=exported.prog)
    imported = commands.add_parser("import", help="merge FILE (from export) into this cache")
    imported.add_argument("file", metavar="FILE")
    imported.set_defaults(handler=import_, prog=imported.prog)


def export(arguments: argparse.Namespace) -> int:
    """Write every kernel's results to ``arguments.file``."""
    try:
        count = table.export_table(arguments.file)
    except OSError as error:
        print(f"{arguments.prog}: {error}", file=sys.stderr)
        return 1
    print(f"exported {count} kernels' tuning results to {arguments.file}")
    return 0


def import_(arguments: argparse.Namespace) -> int:
    """Merge ``arguments.file`` into this machine's tuning cache."""
    try:
        count = table.import_table(arguments.file)
    except (OSError, ValueError) as error:
        print(f"{arguments.prog}: {error}", file=sys.stderr)
        return 1
    print(f"imported {count} kernels' tuning results into {table.directory()}")
    return 0
