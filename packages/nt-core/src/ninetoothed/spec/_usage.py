"""How an application uses its parameters, read from its source.

Some checks depend on how the application reads a parameter, not only on
its arrangement: a tile whose elements the application picks one by one
(``input[i]`` and ``input[i + half]`` of ntops's glu, ``input[src_idx]`` of
its roll) is not read position by position against the other tiles, so the
sizes of its dimensions are the application's business.  A parameter used
only through ``x.source`` (its pointer, sizes and strides, as a scatter
writes with ``ntl.atomic_add``), in the application or in the plain Python
helpers it hands the parameter to, ties no size through its arrangement.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

__all__ = [
    "HELPER_DEPTH",
    "application_tree",
    "element_indexed",
    "function_definition",
    "gathered_parameters",
    "helper_call",
    "namespace_of",
    "source_only_parameters",
    "whole_indexed_parameters",
]

SOURCE_METHODS = ("data_ptr", "stride")
"""Methods of a parameter that read its source, not its tiles (``x.data_ptr()``)."""

HELPER_DEPTH = 8
"""How deep :func:`source_only_parameters` follows helpers calling helpers."""


def application_tree(application: Callable[..., Any]) -> ast.Module | None:
    """The parsed source of ``application``; None when it cannot be read or parsed
    (a builtin, a function typed at a prompt), which every caller reads as "no
    knowledge": treat each parameter the safe way."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(application)))
    except (OSError, TypeError, SyntaxError):
        return None


def function_definition(function: Callable[..., Any]) -> ast.FunctionDef | None:
    """The parsed definition of ``function``; None when its source cannot be read (see
    :func:`application_tree`) or is not a ``def`` (a lambda)."""
    tree = application_tree(function)
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None) if tree else None


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


def gathered_parameters(
    application: Callable[..., Any], level_counts: Mapping[str, int], whole: AbstractSet[str]
) -> frozenset[str]:
    """The tensor parameters (``level_counts``: name -> arranged levels) the application
    reads or writes elsewhere than their arrangement says: those it reaches only
    through ``x.source[...]`` (gather, scatter: wherever their indices say), the
    ``whole`` indexed ones, and those whose tile elements it picks one by one."""
    gathered = source_only_parameters(application, list(level_counts)) | set(whole)
    return frozenset(gathered | element_indexed(application, level_counts))


def whole_indexed_parameters(application: Callable[..., Any], arranged: Sequence[Any]) -> set[str]:
    """The parameters the arrangement returned unchanged (``return x, y``, paired with
    the application's parameters in order) that the application uses only as
    ``x[i, j]``: one index per dimension, no slices, loads and stores alike.

    Upstream reads such a subscript as the element of the whole tensor, so
    these are ``x.source[i, j]`` (ntops's corrcoef loops over a matrix this
    way).  Any other use (the bare name, fewer indices, a helper) keeps the
    one-element-per-program reading; so does an unreadable application.
    """
    names = [p.name for p in _positional(application)]
    ndims = {name: _unchanged_ndim(result) for name, result in zip(names, arranged)}
    ndims = {name: ndim for name, ndim in ndims.items() if ndim}
    tree = application_tree(application) if ndims else None
    if tree is None:
        return set()
    full = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(items) == ndims.get(node.value.id) and not any(map(_not_an_index, items)):
                full.add(id(node.value))
    used: set[str] = set()
    elsewhere: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in ndims:
            (used if id(node) in full else elsewhere).add(node.id)
    return used - elsewhere


def _unchanged_ndim(result: Any) -> int:
    """The dimensions of a dense source tensor returned as it is; 0 for anything else."""
    ndim: int = getattr(result, "ndim", 0)
    if getattr(result, "source", None) is not result:
        return 0
    return 0 if getattr(result, "jagged_dim", None) is not None else ndim


def _not_an_index(item: ast.expr) -> bool:
    """Whether a subscript item selects more than one element (a slice, ``None``, ``...``)."""
    if isinstance(item, ast.Constant):
        return item.value is None or item.value is Ellipsis
    return isinstance(item, (ast.Slice, ast.Starred))


def _positional(function: Callable[..., Any]) -> list[inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p for p in parameters if p.kind in kinds]


def namespace_of(function: Callable[..., Any]) -> dict[str, Any]:
    """The globals and closure cells the names of ``function``'s body resolve in."""
    namespace = dict(getattr(function, "__globals__", {}))
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars if code else (), cells):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:  # an empty cell
            namespace.pop(name, None)
    return namespace


def source_only_parameters(
    application: Callable[..., Any], names: list[str], depth: int = 0
) -> set[str]:
    """The ``names`` the application uses only as ``name.source`` (none if unreadable).

    ``name.data_ptr()`` and ``name.stride(d)`` are the source's too (upstream
    lets them skip ``.source``).  Handing a name to a plain Python helper
    (which code generation inlines) counts as the helper's use of its parameter, followed up to
    :data:`HELPER_DEPTH` calls deep.  Any other use (a tile load, a store, a
    call of anything else) counts as using its arrangement; an application
    whose source cannot be read counts as using every parameter's, so nothing
    is exempted by mistake.
    """
    tree = application_tree(application)
    if tree is None:
        return set()
    source_values = _source_uses(tree)
    handed = _handed_to_helpers(application, tree, set(names)) if depth < HELPER_DEPTH else {}
    through_source: set[str] = set()
    elsewhere: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name) or node.id not in names:
            continue
        if id(node) in source_values:
            through_source.add(node.id)
        elif id(node) in handed and _only_source(*handed[id(node)], depth + 1):
            through_source.add(node.id)
        else:
            elsewhere.add(node.id)
    return through_source - elsewhere


def _source_uses(tree: ast.Module) -> set[int]:
    """The ids of the names in ``tree`` used as ``name.source``, or called as
    ``name.data_ptr()`` / ``name.stride(d)``."""
    uses = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "source":
            uses.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in SOURCE_METHODS:
                uses.add(id(node.func.value))
    return uses


def _only_source(helper: Callable[..., Any], parameter: str, depth: int) -> bool:
    return parameter in source_only_parameters(helper, [parameter], depth)


def _handed_to_helpers(
    application: Callable[..., Any], tree: ast.Module, names: set[str]
) -> dict[int, tuple[Callable[..., Any], str]]:
    """For each bare name in ``names`` passed to a plain Python helper, by the
    id of its node: the helper and the parameter it becomes."""
    namespace = namespace_of(application)
    handed: dict[int, tuple[Callable[..., Any], str]] = {}
    for call in ast.walk(tree):
        found = helper_call(namespace, call) if isinstance(call, ast.Call) else None
        if found is None:
            continue
        helper, arguments = found
        for parameter, argument in arguments.items():
            if isinstance(argument, ast.Name) and argument.id in names:
                handed[id(argument)] = (helper, parameter)
    return handed


def helper_call(
    namespace: Mapping[str, Any], call: ast.Call
) -> tuple[types.FunctionType, dict[str, ast.expr]] | None:
    """A call of a plain Python helper, which code generation inlines: the helper
    and, by the name of the helper's parameter, the argument each parameter gets
    (positional ones up to the first ``*args``, then keywords); None for a call of
    anything else.  ``namespace`` is what the caller's names resolve in."""
    if not isinstance(call.func, ast.Name):
        return None
    helper = namespace.get(call.func.id)
    if not isinstance(helper, types.FunctionType):
        return None
    parameters = _positional_parameters(helper)
    arguments: dict[str, ast.expr] = {}
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred) or index >= len(parameters):
            break
        arguments[parameters[index]] = argument
    for keyword in call.keywords:
        if keyword.arg is not None:
            arguments[keyword.arg] = keyword.value
    return helper, arguments


def _positional_parameters(function: Callable[..., Any]) -> list[str]:
    return [p.name for p in _positional(function)]
