"""nt-triton's layout holds: public modules named, internal ones marked, no import cycle.

Read from the sources (every import statement counts, those inside functions
and under ``TYPE_CHECKING`` too), so a cycle hidden by a lazy import fails
here as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nt_triton

ROOT = Path(nt_triton.__file__).parent

PUBLIC = {
    "nt_triton",
    "nt_triton.plugin",
    "nt_triton.knobs",
    "nt_triton.description",
    "nt_triton.emitted",
    "nt_triton.hopper_attention",
    "nt_triton.hopper_scaled_mm",
    "nt_triton.aot",
    "nt_triton.cache",
    "nt_triton.tuner",
    "nt_triton.tuner.__main__",
}
"""The public modules (docs/design.md, "Public and internal names"); the rest are internal."""

MAX_LINES = 500


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import module` imports the module; other names, the package.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    known = modules()
    graph = {name: imports(name, path, set(known)) for name, path in known.items()}
    assert cycle(graph) is None


def test_the_cycle_check_finds_a_lazy_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycle(graph) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_module_declares_all_and_is_public_or_marked_internal(name: str) -> None:
    path = modules()[name]
    tree = ast.parse(path.read_text())
    targets = [
        target
        for node in tree.body
        for target in (
            node.targets if isinstance(node, ast.Assign)
            else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
    ]  # fmt: skip
    declared = [t for t in targets if isinstance(t, ast.Name) and t.id == "__all__"]
    assert declared, f"{name} declares no __all__"
    internal = any(part.startswith("_") and part != "__main__" for part in name.split("."))
    assert internal != (name in PUBLIC), f"{name}: public modules are {sorted(PUBLIC)}"


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_is_over_the_size_limit(name: str) -> None:
    lines = len(modules()[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines (split it by job)"
