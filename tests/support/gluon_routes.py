"""What the Hopper route tests share (``tests/library/test_hopper_*.py``): the list their
Gluon launches are counted in, the route made to take small calls at once, and a kernel
module's compile and launch stood in."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from support.base import ON_GPU

LAUNCHES: list[Any] = []
"""The Gluon launches the tests count.  One list for all tests: a launch bound in one
test may serve a later one (the compiled operator's launcher is kept per kernel, its
Gluon launches bound per signature), and it counts where it was made."""


def counting(monkeypatch: pytest.MonkeyPatch, kernels: ModuleType) -> list[Any]:
    """:data:`LAUNCHES`, emptied, with the route's first calls waiting for the Gluon
    kernel's compile and, on the CPU, the Hopper GPU and ``kernels``' compile stood in
    (the tests stand its launch in themselves)."""
    from nt_torch import hopper
    from nt_triton._compile_aside import Aside

    LAUNCHES.clear()
    monkeypatch.setattr(hopper, "_wait", lambda: True)  # first calls too: no background compile
    if not ON_GPU:
        monkeypatch.setattr(hopper, "on_hopper", lambda tensor: True)
        monkeypatch.setattr(kernels, "_warm", lambda *args: None)
        monkeypatch.setattr(kernels, "_ASIDE", Aside("stand-in"))
    return LAUNCHES


def compile_stood_in(monkeypatch: pytest.MonkeyPatch, kernels: ModuleType) -> tuple[Any, list[Any]]:
    """``kernels``' compile stood in by one object and its runs recorded: ``(that object,
    the list each run appends the compiled kernel it was given to)``, for the tests of
    which compiled kernel ``kernels.launch`` finds."""
    from nt_triton._compile_aside import Aside

    compiled = object()
    found: list[Any] = []
    monkeypatch.setattr(kernels, "_warm", lambda *args: compiled)
    monkeypatch.setattr(kernels, "_ASIDE", Aside("stand-in"))
    monkeypatch.setattr(kernels, "run", lambda jit, kernel, *a, **k: found.append(kernel))
    monkeypatch.setattr(kernels, "_arguments", lambda *args: ((1,), ()))
    return compiled, found
