"""The tuning cache from the command line (deployment without tuning).

    python -m nt_triton.tuner where            # the folder of the tables
    python -m nt_triton.tuner export FILE      # every kernel's results into FILE
    python -m nt_triton.tuner import FILE      # merge FILE into this cache
    python -m nt_triton.tuner clear            # forget every result

The cache is ``$NINETOOTHED_CACHE_DIR/tuning`` (``docs/tuning.md``).
"""

from __future__ import annotations

import argparse
import sys

from nt_triton.cache import _tables as table

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Run one command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m nt_triton.tuner", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("where", help="print the folder of the tables")
    commands.add_parser("clear", help="forget every persisted result")
    for name in ("export", "import"):
        commands.add_parser(name, help=f"{name} a tuning table").add_argument("file")
    arguments = parser.parse_args(argv)
    if arguments.command == "where":
        print(table.directory())
    elif arguments.command == "clear":
        table.clear()
        print(f"cleared {table.directory()}")
    elif arguments.command == "export":
        count = table.export_table(arguments.file)
        print(f"exported {count} kernels' results to {arguments.file}")
    else:
        try:
            count = table.import_table(arguments.file)
        except (OSError, ValueError) as error:
            print(f"python -m nt_triton.tuner import: {error}", file=sys.stderr)
            return 1
        print(f"imported {count} kernels' results into {table.directory()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
