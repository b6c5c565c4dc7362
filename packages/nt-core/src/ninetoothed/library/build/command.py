"""The command line of the library's build: ``python -m ninetoothed.library.build``.

The same arguments serve ``ninetoothed build-library`` (the ahead-of-time builder's
plugin adds the subcommand with :func:`add_arguments` and :func:`run`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from ninetoothed.errors import NineToothedError
from ninetoothed.library.build.catalogue import ALIASES, OPS, Options
from ninetoothed.runtime.options import INPUT_PRECISIONS

__all__ = ["add_arguments", "main", "run"]


def _names(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the build's options to ``parser``."""
    defaults = Options()
    every = ", ".join(sorted(OPS))
    parser.add_argument(
        "--ops",
        type=_names,
        default=None,
        help=f"comma-separated ops (default: every one: {every}; also {', '.join(ALIASES)})",
    )
    parser.add_argument(
        "--dtypes", type=_names, default=["float16"], help="comma-separated (default float16)"
    )
    parser.add_argument(
        "--target", default=None, help="GPU architecture, e.g. sm_90 (default: the current GPU)"
    )
    parser.add_argument("--out", required=True, help="the directory to write into")
    parser.add_argument(
        "--max-ndim",
        type=int,
        default=defaults.max_ndim,
        help="highest rank of strided element-wise calls",
    )
    parser.add_argument(
        "--max-row", type=int, default=defaults.max_row, help="longest row of the row-wise ops"
    )
    parser.add_argument(
        "--head-dims",
        type=lambda text: tuple(int(v) for v in _names(text)),
        default=defaults.head_dims,
        help="powers of two the attention heads pad to (default 64,128)",
    )
    parser.add_argument(
        "--configurations",
        type=int,
        default=defaults.configurations,
        help="configurations of a tuned kernel to time on the GPU",
    )
    parser.add_argument(
        "--float32-products",
        choices=INPUT_PRECISIONS,
        default=defaults.float32_products,
        help="how float32 matrix products are computed (default ieee: float32, as cuBLAS's "
        "default math; tf32 rounds the operands for the tensor cores)",
    )


def run(arguments: argparse.Namespace) -> int:
    """Build from parsed ``arguments``; the exit status (errors printed, not raised)."""
    from ninetoothed.library.build.library import build_library

    options = Options(
        arguments.max_ndim,
        arguments.max_row,
        arguments.head_dims,
        arguments.configurations,
        arguments.float32_products,
    )
    began = time.perf_counter()
    try:
        library = build_library(
            arguments.out, arguments.ops, arguments.dtypes, arguments.target, options
        )
    except (ValueError, OSError, NineToothedError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{library} ({time.perf_counter() - began:.1f} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ninetoothed.library.build [options]``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m ninetoothed.library.build",
        description="Build NineToothed's kernel library as a C library.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
