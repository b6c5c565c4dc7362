"""The tuning cache from the command line (deployment without tuning).

    python -m nt_triton.tuner where            # the folder of the tables
    python -m nt_triton.tuner export FILE      # every kernel's results into FILE
    python -m nt_triton.tuner import FILE      # merge FILE into this cache
    python -m nt_triton.tuner clear            # forget every result

``ninetoothed tune export|import`` runs the same ``export`` and ``import``
(:mod:`nt_triton.tuner._cli`).  The cache is ``$NINETOOTHED_CACHE_DIR/tuning``
(``docs/tuning.md``).
"""

from __future__ import annotations

import argparse
import sys

from nt_triton.cache import _tables as table
from nt_triton.tuner._cli import add_transfers

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Run one command; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m nt_triton.tuner", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("where", help="print the folder of the tables")
    commands.add_parser("clear", help="forget every persisted result")
    add_transfers(commands)
    arguments = parser.parse_args(argv)
    if arguments.command == "where":
        print(table.directory())
    elif arguments.command == "clear":
        table.clear()
        print(f"cleared {table.directory()}")
    else:
        status: int = arguments.handler(arguments)
        return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
