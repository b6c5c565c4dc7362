"""``ninetoothed build FILE:PREMAKE``: a C library from the shell (:func:`ninetoothed.build`).

``FILE`` defines ``PREMAKE`` (a function returning ``(arrangement,
application, tensors)``) and its configurations (a list of ``(args, kwargs,
compilation_configs)``, ``configs`` unless ``--configs`` names another), as
for :func:`ninetoothed.build`; the command builds them into one library and
prints where its files are.  ``--target`` compiles for a named GPU
architecture, also on a machine without a GPU (a C compiler is needed, not a
CUDA toolkit; docs/aot.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ninetoothed._commands.loading import (
    CommandError,
    Reference,
    describe_value,
    parse_reference,
    run_file,
    take,
)

__all__ = ["add_command", "build"]

DESCRIPTION = """\
Build a kernel's variants into one C library, as ninetoothed.build does.  FILE
defines PREMAKE, a function returning (arrangement, application, tensors), and
the list of its configurations, (args, kwargs, compilation_configs) each
(`configs` unless --configs names another).  --target compiles for a named GPU
architecture, also on a machine without a GPU: a C compiler is needed, not a
CUDA toolkit.  Prints where the library, its header and its C source are.
"""

EPILOG = """\
example:
  ninetoothed build axpy.py:premake --meta-parameters block_size \\
      --kernel-name axpy --output-dir build --target sm_90
"""


def add_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``build`` to the ``ninetoothed`` command."""
    command = subparsers.add_parser(
        "build", help="build a kernel's variants into a C library (ninetoothed.build)",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    command.add_argument(
        "premake", metavar="FILE:PREMAKE",
        help="a Python file and its function returning (arrangement, application, tensors)",
    )  # fmt: skip
    command.add_argument(
        "--configs", default="configs", metavar="NAME",
        help="the list of (args, kwargs, compilation_configs) in FILE (default: configs)",
    )  # fmt: skip
    command.add_argument(
        "--meta-parameters", default="", metavar="A,B",
        help="PREMAKE's parameters that only change speed, tuned at build time (comma-separated)",
    )  # fmt: skip
    command.add_argument(
        "--kernel-name", metavar="NAME",
        help="the library's name: launch_NAME in NAME.so (default: PREMAKE's name)",
    )  # fmt: skip
    command.add_argument(
        "--output-dir", type=Path, metavar="DIR", help="where the files go (default: the cache)"
    )
    command.add_argument(
        "--target", metavar="sm_XY", help="the GPU architecture (default: the current GPU's)"
    )
    command.set_defaults(handler=build, prog=command.prog)


def build(arguments: argparse.Namespace) -> int:
    """Build the library ``arguments`` describe and print its files."""
    import ninetoothed

    reference = parse_reference(arguments.premake, "premake")
    if not arguments.configs.isidentifier():
        raise CommandError(f"--configs takes a name defined in FILE, got {arguments.configs!r}")
    namespace = run_file(reference.path)
    premake = take(namespace, reference)
    if not callable(premake):
        raise CommandError(f"{reference} is {describe_value(premake)}, not a function")
    configs = take(namespace, Reference(reference.path, arguments.configs))
    meta = tuple(name.strip() for name in arguments.meta_parameters.split(",") if name.strip())
    kernel = ninetoothed.build(
        premake,
        configs,
        meta_parameters=meta,
        kernel_name=arguments.kernel_name or reference.name,
        output_dir=arguments.output_dir,
        target=arguments.target,
    )
    library = kernel.library
    count = len(library.built)
    print(f"built {library.function} ({count} variant{'' if count == 1 else 's'})")
    for label, path in (("library", library.library), ("header", library.header)):
        print(f"  {label}: {path}")
    print(f"  source: {library.source}")
    return 0
