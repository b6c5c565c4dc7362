"""Shared by the upstream-style tests: the documented visualization examples.

``docs/examples/visualize.py`` holds concrete arrangements (a tiled matrix,
matrix multiplication, conv2d) that the debugging and visualization tests
check; it is loaded from its path, as a reader would run it.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "visualize.py"


@pytest.fixture(scope="session")
def examples() -> ModuleType:
    """The module ``docs/examples/visualize.py``."""
    spec = importlib.util.spec_from_file_location("ninetoothed_visualize_examples", EXAMPLES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
