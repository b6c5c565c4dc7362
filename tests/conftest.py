"""Shared fixtures: the ``framework`` parametrisation of kernel tests, ``counted`` and
``as_on_gpu``.

``framework`` runs a test once per framework: ``torch``, ``paddle`` and
``jax``.  A framework whose package is not installed is skipped with a
visible reason (``pytest -rs``), which is how the GPU machine, where Paddle
is not installed, runs the matrix.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

FRAMEWORKS = {
    "torch": ("torch", "support.torch_support", "TorchSupport"),
    "paddle": ("paddle", "support.paddle_support", "PaddleSupport"),
    "jax": ("jax", "support.jax_support", "JaxSupport"),
}


@pytest.fixture(params=list(FRAMEWORKS), scope="session")
def framework(request: pytest.FixtureRequest):
    """A :class:`support.base.FrameworkSupport` for each installed framework."""
    module_name, support_module, class_name = FRAMEWORKS[request.param]
    try:
        importlib.import_module(module_name)
    except ImportError:
        pytest.skip(f"{module_name} is not installed here")
    support = importlib.import_module(support_module)
    return getattr(support, class_name)()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many calls were validated (``Adapter.bind``) and how many made a fast-path
    plan (``FastLauncher.launch_bound``); reset by assigning zeros."""
    from ninetoothed.runtime.adapter import Adapter
    from nt_triton._launch.launcher import FastLauncher

    seen = {"bind": 0, "plan": 0}
    bind, launch_bound = Adapter.bind, FastLauncher.launch_bound

    def counted_bind(self: Adapter, *args: Any, **kwargs: Any) -> Any:
        seen["bind"] += 1
        return bind(self, *args, **kwargs)

    def counted_plan(self: FastLauncher, *args: Any, **kwargs: Any) -> Any:
        seen["plan"] += 1
        return launch_bound(self, *args, **kwargs)

    monkeypatch.setattr(Adapter, "bind", counted_bind)
    monkeypatch.setattr(FastLauncher, "launch_bound", counted_plan)
    return seen


@pytest.fixture
def as_on_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Compiled calls as on the GPU, on the CPU: Triton's JIT mode, the hand-over to
    Inductor on and CPU tensors taken for GPU ones; yields a list for traced graphs
    (``support.traced_graphs.trace``); Dynamo starts afresh, its counters at zero."""
    import torch
    from torch._dynamo.utils import counters

    from nt_torch import inductor

    torch._dynamo.reset()
    counters.clear()

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setenv(inductor.KNOB, "inductor")
    monkeypatch.setattr(inductor, "DEVICE_TYPES", ("cuda", "cpu"))
    graphs: list[Any] = []
    yield graphs
    torch._dynamo.reset()
