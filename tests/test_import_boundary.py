"""The plugin boundary holds: code imports only other distributions' public names.

docs/design.md ("Public and internal names"): a module is internal when a
component of its dotted path starts with ``_``, and across distributions code
imports only public modules and the names their ``__all__`` lists.  Checked
here, from the sources (imports inside functions and under ``TYPE_CHECKING``
count), for every consumer of another distribution's code:

* each distribution's sources (nt-core, nt-triton, nt-torch, nt-paddle,
  nt-jax) against every other distribution, and nt-core against none at all:
  the core names no plugin;
* nt-triton's ahead-of-time builder (``nt_triton/aot/``) against the rest of
  nt-triton, whose code generator it uses like any other consumer;
* the numpy adapter of the tests (``tests/support/numpy_adapter.py``), written
  against the public contract only.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = {
    "ninetoothed": "nt-core",
    "nt_triton": "nt-triton",
    "nt_torch": "nt-torch",
    "nt_paddle": "nt-paddle",
    "nt_jax": "nt-jax",
}
"""Each distribution's top-level package."""


class Consumer(NamedTuple):
    """Code that imports other distributions' names."""

    label: str
    files: tuple[Path, ...]
    own: str
    """The package whose internals it may import (its own)."""
    forbidden: frozenset[str] = frozenset()
    """Top-level packages it may not import at all."""


def sources(package: str) -> tuple[Path, ...]:
    root = ROOT / "packages" / PACKAGES[package] / "src" / package
    return tuple(sorted(root.rglob("*.py")))


CONSUMERS = [
    Consumer("nt-core", sources("ninetoothed"), "ninetoothed",
             frozenset(PACKAGES) - {"ninetoothed"}),
    *(Consumer(PACKAGES[p], sources(p), p) for p in PACKAGES if p != "ninetoothed"),
    Consumer("nt-triton's ahead-of-time builder",
             tuple(sorted((ROOT / "packages/nt-triton/src/nt_triton/aot").rglob("*.py"))),
             "nt_triton.aot"),
    Consumer("the numpy test adapter", (ROOT / "tests/support/numpy_adapter.py",), "support"),
]  # fmt: skip


def imports_of(path: Path) -> Iterator[tuple[str, str | None, int]]:
    """``(module, name or None, line)`` of every absolute import in a file, wherever it stands."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def is_internal(module: str) -> bool:
    return any(part.startswith("_") and part != "__main__" for part in module.split("."))


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def offences(consumer: Consumer) -> list[str]:
    """The imports of ``consumer`` that cross the boundary through a non-public name."""
    found = []
    for path in consumer.files:
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for module, name, line in imports_of(path):
            top = module.partition(".")[0]
            if top not in PACKAGES or module == consumer.own:
                continue
            if module.startswith(consumer.own + "."):
                continue
            if top in consumer.forbidden:
                found.append(f"{where}:{line} imports {module} ({PACKAGES[top]})")
                continue
            target = f"{module}.{name}" if name and is_module(f"{module}.{name}") else module
            if is_internal(target):
                found.append(f"{where}:{line} imports the internal {target}")
            elif name is not None and target == module and name != "*":
                public = getattr(importlib.import_module(module), "__all__", ())
                if name not in public:
                    found.append(f"{where}:{line} imports {name}, not in {module}.__all__")
    return found


@pytest.mark.parametrize("consumer", CONSUMERS, ids=lambda c: c.label)
def test_consumers_import_only_public_names(consumer: Consumer) -> None:
    assert consumer.files, f"{consumer.label}: no sources found"
    found = offences(consumer)
    assert not found, "\n".join(found)


def test_the_check_finds_every_kind_of_crossing(tmp_path: Path) -> None:
    source = tmp_path / "adapter.py"
    source.write_text(
        "from nt_triton import _kernel\n"  # an internal module, by name
        "from nt_triton._kernel import LOADED\n"  # from an internal module
        "import nt_triton._abi\n"  # an internal module
        "from nt_triton import is_not_listed\n"  # not in __all__
        "from ninetoothed.runtime.hookspecs import HostReads\n"  # public: fine
        "from nt_triton import TritonKernel\n"  # public: fine
        "def later():\n"
        "    from nt_torch import fastpath\n"  # forbidden package, inside a function
    )
    consumer = Consumer("fake", (source,), "fake", frozenset({"nt_torch"}))
    found = [line.partition(" ")[2] for line in offences(consumer)]
    assert found == [
        "imports the internal nt_triton._kernel",
        "imports the internal nt_triton._kernel",
        "imports the internal nt_triton._abi",
        "imports is_not_listed, not in nt_triton.__all__",
        "imports nt_torch (nt-torch)",
    ]
