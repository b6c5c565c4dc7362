"""The benchmark scripts of ``benchmarks/``, loaded as modules for their tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["BENCHMARKS", "load"]

BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
"""The folder of the benchmark scripts."""


def load(name: str) -> Any:
    """A fresh module of ``benchmarks/<name>.py`` (fresh: a test may patch its functions)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
