"""How an application uses its parameters, read from its source.

Some checks depend on how the application reads a parameter, not only on
its arrangement: a tile whose elements the application picks one by one
(``input[i]`` and ``input[i + half]`` of ntops's glu, ``input[src_idx]`` of
its roll) is not read position by position against the other tiles, so the
sizes of its dimensions are the application's business.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Mapping
from typing import Any


def application_tree(application: Callable[..., Any]) -> ast.Module | None:
    """The parsed source of ``application``; None when it cannot be read or parsed
    (a builtin, a function typed at a prompt), which every caller reads as "no
    knowledge": treat each parameter the safe way."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(application)))
    except (OSError, TypeError, SyntaxError):
        return None


def subscript_depths(application: Callable[..., Any], names: set[str]) -> dict[str, int]:
    """The deepest chain of subscripts (``x[i][j]`` is 2) the application puts on each name.

    Empty when the source cannot be read, so that callers treat every
    parameter as read whole (the safe reading for the checks).
    """
    tree = application_tree(application)
    if tree is None:
        return {}
    depths: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        depth, value = 1, node.value
        while isinstance(value, ast.Subscript):
            depth, value = depth + 1, value.value
        if isinstance(value, ast.Name) and value.id in names:
            depths[value.id] = max(depths.get(value.id, 0), depth)
    return depths


def element_indexed(application: Callable[..., Any], level_counts: Mapping[str, int]) -> set[str]:
    """The parameters (name -> number of arranged levels) the application indexes
    down to single elements of their tiles."""
    depths = subscript_depths(application, set(level_counts))
    return {name for name, depth in depths.items() if depth >= level_counts[name] - 1 >= 1}
