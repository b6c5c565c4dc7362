"""CI runs are reproducible and cannot stall: fixed Hypothesis seeds, a per-test time limit."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings


def in_ci() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("NOX_CURRENT_SESSION"))


def test_the_ci_profile_derandomises_hypothesis():
    assert settings.get_profile("ci").derandomize
    if in_ci():
        assert settings.default.derandomize, "CI must load the 'ci' Hypothesis profile"


def test_each_test_has_a_time_limit(request: pytest.FixtureRequest):
    """pyproject.toml gives every test 300 s (pytest-timeout, installed by ``nox -s tests``)."""
    if not request.config.pluginmanager.hasplugin("timeout"):
        if in_ci():
            pytest.fail("pytest-timeout is not installed in the CI session")
        pytest.skip("pytest-timeout is not installed here")
    assert float(request.config.getini("timeout")) == 300
