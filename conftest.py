"""Where the test suite's kernels run: Triton's interpreter or the GPU.

pytest loads this file before any test module, so it is the one place that
picks the mode, before Triton or JAX is imported anywhere:

* by default (CI, ``nox -s tests``, a plain ``pytest``) kernels run through
  Triton's interpreter and JAX stays on the CPU;
* with ``NT_TEST_GPU=1`` (set by ``tools/gpu_tests.py``, i.e. ``nox -s gpu``)
  kernels are compiled for the GPU, and every test checks that nothing switched
  the interpreter on behind its back: a GPU run that quietly interprets
  passes while testing nothing the GPU does.

In a GPU run each failure is also named on stderr the moment it is reported:
a device call's time limit can stop pytest before its summary, and a cut
run's ``F`` otherwise names nothing (seen twice).

It also fixes Hypothesis's randomness in CI (``CI`` set, or inside a nox
session): the ``ci`` profile derandomises every property test, so a CI run
is reproducible and a failure there is one a developer can replay; locally
each run draws fresh examples.
"""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"

if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def in_ci() -> bool:
    """Whether this run is CI's: ``CI`` set (GitHub Actions and most others) or a nox session."""
    return bool(os.environ.get("CI") or os.environ.get("NOX_CURRENT_SESSION"))


settings.register_profile("ci", derandomize=True, print_blob=True)
if in_ci():
    settings.load_profile("ci")


if ON_GPU and _interpreting():
    raise pytest.UsageError("NT_TEST_GPU=1 with TRITON_INTERPRET set: unset TRITON_INTERPRET")


@pytest.fixture(autouse=True)
def _gpu_runs_compile(request: pytest.FixtureRequest):
    """In a GPU run, fail any test that leaves Triton's interpreter switched on."""
    yield
    if ON_GPU and _interpreting():
        pytest.fail(f"{request.node.nodeid} ran with TRITON_INTERPRET set in a GPU run")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In a GPU run, name a failed test at once (under xdist, in the controller, which
    receives every worker's reports): the summary comes only at the end."""
    if ON_GPU and report.failed and "PYTEST_XDIST_WORKER" not in os.environ:
        sys.stderr.write(f"\nFAILED {report.nodeid} ({report.when})\n")
        sys.stderr.flush()
