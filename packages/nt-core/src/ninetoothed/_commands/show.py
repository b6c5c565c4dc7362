"""``ninetoothed show FILE:KERNEL``: what a kernel is made of, from the shell.

Prints the kernel's arrangement (each parameter's levels, outermost first),
its launch grid, its symbols, its configurations, the generated source and,
with ``--run`` (which runs ``FILE`` as ``python FILE`` does, calls
included), the configuration its most recent call used.  Sizes are written
with the parameters' names (``x.shape[0]``), not the generated symbols'.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from typing import Any

from ninetoothed._commands.loading import CommandError, describe_value, load, parse_reference
from ninetoothed.arrangement.simplify import simplify
from ninetoothed.runtime.make import Kernel
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["add_command", "describe", "describe_configuration", "how_chosen", "show"]

DESCRIPTION = """\
Describe a kernel that FILE makes: its arrangement (each parameter's levels,
outermost first, with sizes written as x.shape[0]), its launch grid, its
symbols, its configurations, the generated source and, with --run, the
configuration its most recent call used.  FILE is loaded as a module (its
folder first on the import path); --run runs it as `python FILE` does.
"""

EPILOG = """\
examples:
  ninetoothed show add.py:kernel           # load add.py, describe its 'kernel'
  ninetoothed show add.py:kernel --run     # run add.py first, then say which
                                           # configuration its last call used
  ninetoothed show add.py:kernel --no-source
"""


def add_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``show`` to the ``ninetoothed`` command."""
    command = subparsers.add_parser(
        "show", help="describe a kernel: arrangement, grid, generated source, configuration",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    command.add_argument(
        "kernel", metavar="FILE:KERNEL",
        help="a Python file and the name of a kernel it makes (ninetoothed.make or jit)",
    )  # fmt: skip
    command.add_argument(
        "--run", action="store_true",
        help="run FILE as a program first (its __main__ part too), so that its calls "
        "happen and the configuration they used can be shown",
    )  # fmt: skip
    command.add_argument(
        "--no-source", dest="source", action="store_false", help="leave the generated source out"
    )
    command.set_defaults(handler=show, prog=command.prog)


def show(arguments: argparse.Namespace) -> int:
    """Load the kernel ``arguments.kernel`` names and print its description."""
    reference = parse_reference(arguments.kernel, "kernel")
    kernel = load(reference, as_main=arguments.run)
    if not isinstance(kernel, Kernel):
        raise CommandError(
            f"{reference} is {describe_value(kernel)}, not a kernel (made by ninetoothed.make or "
            "ninetoothed.jit)"
        )
    print(describe(kernel, str(reference), called=arguments.run, source=arguments.source))
    return 0


def describe(kernel: Kernel, title: str, *, called: bool = False, source: bool = True) -> str:
    """The text ``ninetoothed show`` prints for ``kernel``."""
    spec = kernel.spec
    name = _namer(spec)
    lines = [f"kernel {spec.name!r} ({title})", "", "arrangement (levels, outermost first):"]
    for parameter in spec.parameters:
        if parameter.is_scalar:
            lines.append(f"  {parameter.name}: a scalar")
            continue
        levels = " -> ".join(_shape(level.shape, name) for level in parameter.arranged.levels())
        lines.append(f"  {parameter.name}: {_shape(parameter.source.shape, name)} as {levels}")
    lines += [
        "",
        f"grid (one program per element): {_shape(spec.grid, name)}",
        *_symbols(spec),
        "",
        *_configurations(kernel),
        f"configuration in use: {_in_use(kernel, called)}",
        "",
        f"generated source: {kernel.source_path}",
    ]
    if source:
        lines += ["", kernel.source.rstrip()]
    return "\n".join(lines)


def _namer(spec: KernelSpec) -> Callable[[Any], str]:
    """A function writing a size expression with ``x.shape[d]`` for the source sizes."""
    names = {
        str(size): f"{parameter.name}.shape[{dim}]"
        for parameter in spec.parameters
        for dim, size in enumerate(parameter.source.shape)
        if not isinstance(size, int)
    }
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None

    def name(value: Any) -> str:
        text = str(simplify(value))
        return pattern.sub(lambda match: names[match.group(1)], text) if pattern else text

    return name


def _shape(shape: Iterable[Any], name: Callable[[Any], str]) -> str:
    sizes = [name(size) for size in shape]
    return f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(sizes)})"


def _symbols(spec: KernelSpec) -> list[str]:
    kinds = (
        ("meta (tuned, or pinned at the call)", spec.meta_symbols),
        ("constexpr (given at the call, compiled in)", spec.constexpr_symbols),
        ("run-time (given at the call)", spec.runtime_symbols),
    )
    return [f"symbols, {kind}: {', '.join(symbols)}" for kind, symbols in kinds if symbols]


def _configurations(kernel: Kernel) -> list[str]:
    configurations = list(kernel.generated.configurations)
    lines = [f"configurations ({len(configurations)}):"]
    lines += [f"  {describe_configuration(configuration)}" for configuration in configurations]
    return lines


def describe_configuration(configuration: Any) -> str:
    """``BLOCK_SIZE=64; num_warps=4, num_stages=3``: a configuration in one line."""
    values = ", ".join(f"{key}={value}" for key, value in configuration.kwargs().items())
    launch = f"num_warps={configuration.num_warps}, num_stages={configuration.num_stages}"
    return f"{values}; {launch}" if values else launch


def _in_use(kernel: Kernel, called: bool) -> str:
    # ``best_config`` is the Triton backend's record of the last call (docs/tuning.md).
    configuration = getattr(kernel.generated, "best_config", None)
    if configuration is not None:
        return f"{describe_configuration(configuration)} ({how_chosen(kernel)})"
    if not called:
        return "none yet: the kernel was not called (--run runs FILE and its calls)"
    return "none: running FILE made no call that chose one"


def how_chosen(kernel: Kernel) -> str:
    """How the configuration of ``kernel``'s calls is chosen, in a few words."""
    if kernel.generated.interpreting:
        return "interpreter: first configuration, not tuned"
    if len(kernel.generated.configurations) == 1:
        return "the only configuration"
    return "the most recent call's, chosen by the tuner or its cache"
