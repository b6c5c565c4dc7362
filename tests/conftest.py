"""Shared fixtures: the ``framework`` parametrisation of kernel tests.

``framework`` runs a test once per framework: ``torch``, ``paddle`` and
``jax``.  A framework whose package is not installed is skipped with a
visible reason (``pytest -rs``), which is how the GPU machine, where Paddle
is not installed, runs the matrix.
"""

from __future__ import annotations

import importlib

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
