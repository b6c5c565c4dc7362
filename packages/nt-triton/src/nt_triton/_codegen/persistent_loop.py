"""Persistent programs (``make(..., persistent=True)``): each program walks the grid.

A kernel normally launches one program per tile group of the grid.  A
persistent kernel launches at most one program per multiprocessor
(:func:`nt_triton._persistent_grid.program_cap`), and each runs the application
for the grid indices ``tl.program_id(0)``, ``+ tl.num_programs(0)``, ... up
to the grid's program count.  Matrix products gain from it on Hopper: a
program's next tile starts loading while its previous result is stored
(Triton software-pipelines the outer loop with ``flatten=True``), and the
launch has a fixed, small number of programs (measured in ``docs/tuning.md``).

Only the per-program part of the prologue (the program's index and the grid
indices derived from it) moves into the loop; aranges and widened strides
stay outside, as they do not depend on the program.
"""

from __future__ import annotations

import ast

from ninetoothed.arrangement.symbol import SymbolLike
from ninetoothed.errors import CodegenError
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton._codegen import naming
from nt_triton._codegen.context import Context, names_in

__all__ = ["check_application", "program_count", "requested", "wrap"]


def requested(spec: KernelSpec) -> bool:
    """Whether the kernel's options ask for persistent programs (the code generator
    and the host's grid both follow this)."""
    return bool(spec.options.get("persistent", False))


def check_application(context: Context, body: list[ast.stmt]) -> None:
    """Refuse an application that returns early: in a persistent program that
    ``return`` would also skip every later grid index the program owns."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Return):
            raise CodegenError(
                f"{context.spec.label}: persistent=True needs an application without "
                f"'return' (line {node.lineno} of the rewritten application returns): "
                "each persistent program runs the application for several grid indices, "
                "and a return would skip the rest; restructure it with if/else, or drop "
                "persistent=True"
            )


def program_count(context: Context, grid: tuple[SymbolLike, ...]) -> str:
    """The kernel's expression for the grid's number of programs (sizes it names become
    kernel parameters)."""
    factors = []
    for size in grid:
        context.used_names |= names_in(size)
        factors.append(f"({size})")
    return " * ".join(factors) or "1"


def wrap(
    count: str, per_program: list[str], body: list[ast.stmt]
) -> tuple[list[str], list[ast.stmt]]:
    """The prologue lines and the loop that replace ``per_program`` + ``body``.

    ``per_program`` assigns :data:`naming.PROGRAM_ID` from ``tl.program_id(0)``
    first; inside the loop it takes the loop's index instead.
    """
    first, *rest = per_program
    assert first.startswith(f"{naming.PROGRAM_ID} = tl.program_id(0)"), first
    loop_source = (
        f"for {naming.PERSISTENT_INDEX} in tl.range(tl.program_id(0), "
        f"{naming.PROGRAM_COUNT}, tl.num_programs(0), flatten=True):\n    pass\n"
    )
    loop = ast.parse(loop_source).body[0]
    assert isinstance(loop, ast.For)
    indices = "\n".join([f"{naming.PROGRAM_ID} = {naming.PERSISTENT_INDEX}", *rest])
    loop.body = ast.parse(indices).body + body
    return [f"{naming.PROGRAM_COUNT} = {count}"], [loop]
