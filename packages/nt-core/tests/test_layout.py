"""nt-core's layout: no import cycle, public and internal names, small modules, upstream's paths.

The rules are docs/design.md's ("Map" and "Public and internal names"):
modules import one another without a cycle, lazy and ``TYPE_CHECKING``
imports included; every module declares ``__all__``; no module is over 500
lines; and every module path upstream programs import still gives them the
names they import.  That other distributions import only public names (a
module whose dotted path has no component starting with ``_``, and names its
``__all__`` lists) is ``tests/test_import_boundary.py``'s, for every
distribution at once.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import ninetoothed

SOURCE = Path(ninetoothed.__file__).parent
"""``packages/nt-core/src/ninetoothed``."""

PACKAGES = SOURCE.parents[2]
"""``packages/``: the other distributions' sources are beside nt-core's."""

OTHER_SOURCES = ("nt-triton", "nt-torch", "nt-paddle", "nt-jax")

MAX_LINES = 500


def module_name(path: Path) -> str:
    """The dotted name of a source file under :data:`SOURCE`."""
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def imports_of(path: Path, package: str) -> Iterator[tuple[str, str | None, int]]:
    """``(module, imported name or None, line)`` for every import of ``package`` in a
    file, wherever it stands (in a function, under ``TYPE_CHECKING``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == package:
                for alias in node.names:
                    yield node.module, alias.name, node.lineno


def imported_module(module: str, name: str | None) -> str:
    """The nt-core module an import loads: ``from a import b`` loads ``a.b`` when
    that is a module, else ``a``."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module


def import_graph() -> dict[str, dict[str, int]]:
    """Each nt-core module's imports of other nt-core modules, with a line of each."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in MODULES.items():
        edges = graph.setdefault(module, {})
        for imported, name, line in imports_of(path, "ninetoothed"):
            target = imported_module(imported, name)
            if target != module:
                edges.setdefault(target, line)
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle of ``graph`` as the modules along it (first = last), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        stack.append(module)
        for target in graph.get(module, {}):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_cycle_inside_nt_core() -> None:
    graph = import_graph()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle, cycle[1:])]
        pytest.fail("nt-core imports in a cycle: " + "; ".join(steps))


def test_the_cycle_check_finds_a_cycle_through_type_checking_imports(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ninetoothed.arrangement.tensor import Tensor\n"
    )
    graph = import_graph()
    graph["ninetoothed.arrangement.symbol"] = {
        imported_module(m, n): line for m, n, line in imports_of(module, "ninetoothed")
    }
    assert find_cycle(graph) is not None


def declares_all(path: Path) -> bool:
    return any(
        isinstance(node, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(target, ast.Name) and target.id == "__all__"
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in ast.parse(path.read_text()).body
    )


def test_every_module_declares_all() -> None:
    missing = [module for module, path in MODULES.items() if not declares_all(path)]
    assert not missing, f"modules without __all__: {', '.join(missing)}"


def test_no_module_is_over_500_lines() -> None:
    long = {
        module: count
        for module, path in MODULES.items()
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


UPSTREAM_PATHS = {
    "ninetoothed.tensor": ("Tensor",),
    "ninetoothed.symbol": ("Symbol", "block_size"),
    "ninetoothed.dtype": (
        "bfloat16 float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64"
    ).split(),
    "ninetoothed.language": ("libdevice", "dot", "zeros", "float16"),
    "ninetoothed.debugging": ("simulate_arrangement",),
    "ninetoothed.visualization": ("visualize", "visualize_arrangement"),
    "ninetoothed": (
        "Symbol Tensor block_size make jit build eval subs bfloat16 float16 float32 float64 "
        "int8 int16 int32 int64 uint8 uint16 uint32 uint64"
    ).split(),
}
"""Every module path upstream's programs, tests and documentation import from, with
the names they take from it (upstream's ``src/ninetoothed/__init__.py`` and tests)."""


@pytest.mark.parametrize("path", sorted(UPSTREAM_PATHS))
def test_upstream_module_paths_give_upstreams_names(path: str) -> None:
    module = importlib.import_module(path)
    for name in UPSTREAM_PATHS[path]:
        assert name in module.__all__, f"{path}.__all__ lacks {name}"
        value = getattr(module, name)
        home = importlib.import_module(getattr(value, "__module__", None) or path)
        # A re-export is the defining module's object, not a copy.
        assert getattr(home, name, value) is value


def test_re_export_modules_hold_no_code_of_their_own() -> None:
    for short in ("tensor", "symbol", "dtype", "debugging", "visualization"):
        path = f"ninetoothed.{short}"
        tree = ast.parse(MODULES[path].read_text())
        kinds = {type(node) for node in tree.body}
        assert kinds <= {ast.Expr, ast.ImportFrom, ast.Assign}, path
