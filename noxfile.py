"""Development sessions for the NineToothed monorepo.

``nox -l`` lists them.  Without nox installed, ``python3 dev.py SESSION``
fetches it into ``.bootstrap/`` and runs the same sessions.

CPU sessions (``tests``, ``demo``, ``lint``) build their own virtual
environments under ``.nox/`` and reuse them on later runs.  GPU sessions
(``gpu``, ``bench``) run in the current environment and install nothing, since
GPU machines carry their own CUDA builds of the frameworks and may have no
network.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent

nox.options.sessions = ["lint", "tests"]
# Installing torch, paddle, jax and triton takes a minute; reuse environments.
nox.options.reuse_existing_virtualenvs = True

PACKAGES = ["nt-core", "nt-triton", "nt-torch", "nt-paddle", "nt-jax"]
"""The distributions, in dependency order."""

CPU_REQUIREMENTS = [
    # Pinned: an unpinned torch pulls the newest CUDA build (several GB); 2.13.0
    # is the CPU build this project is tested with.
    "torch==2.13.0",
    "triton",
    "paddlepaddle",
    "jax[cpu]",
    "pytest",
    "pytest-xdist",
    # A per-test time limit (pyproject.toml sets it): a hang fails one named test.
    "pytest-timeout",
    "hypothesis",
    # ninetoothed.visualization's optional dependency (nt-core[visualization]).
    "matplotlib",
]
"""Third-party packages of the CPU test environment."""

LINT_REQUIREMENTS = ["ruff==0.17.6", "mypy==2.4.1"]

DOCS_REQUIREMENTS = [
    "mkdocs==1.6.1",
    "mkdocstrings[python]==1.0.8",
    "mkdocstrings-python==2.0.11",
    # The tutorials' pictures: the build hook (tools/mkdocs_hooks.py) runs the
    # pages' drawing code, which makes kernels (nt-core, nt-triton) and draws.
    "matplotlib",
    "triton",
    "setuptools>=77",
    # tests/docs/test_docs_build.py: a broken link or an unlisted page fails the build.
    "pytest",
    "pytest-timeout",
]
"""The documentation site's tools; mkdocstrings reads the sources statically,
so the frameworks are not installed."""

TYPECHECK_REQUIREMENTS = ["torch==2.13.0", "jax[cpu]", "numpy", "pluggy", "pytest"]
"""Typed third-party packages mypy reads. Triton, jax-triton and Paddle ship no
types and are left out (pyproject.toml tells mypy to skip them); the packages
of this repository are read from packages/*/src."""

CPU_ENV = {"TRITON_INTERPRET": "1", "JAX_PLATFORMS": "cpu"}
"""Run Triton kernels in its interpreter and keep JAX from probing for GPUs."""

# dev.py runs nox with .bootstrap on PYTHONPATH and names the interpreter that
# ran it; both must not leak into the sessions' own Python processes.
_BOOTSTRAPPED = "NT_DEV_OUTER_PYTHONPATH" in os.environ
HOST_PYTHON = os.environ.get("NT_DEV_PYTHON") or shutil.which("python") or "python3"
"""The current environment's interpreter, for sessions that install nothing."""


def test_paths() -> list[str]:
    """The cross-package ``tests/`` folder and every package's own ``tests/``."""
    paths = [ROOT / "tests", *sorted(ROOT.glob("packages/*/tests"))]
    return [str(path.relative_to(ROOT)) for path in paths if path.is_dir()]


def isolate(session: nox.Session) -> None:
    """Give the session's commands the user's PYTHONPATH, not dev.py's."""
    if _BOOTSTRAPPED:
        session.env["PYTHONPATH"] = os.environ["NT_DEV_OUTER_PYTHONPATH"] or None


def install_cpu_stack(session: nox.Session) -> None:
    """Install the CPU frameworks, the test tools and the five packages (editable)."""
    isolate(session)
    session.install("setuptools>=77", *CPU_REQUIREMENTS)
    # One pip command for all five, so each one's dependency on the others
    # (nt-core==0.1.0, which is not on PyPI) resolves to the local copy.
    editable = [arg for package in PACKAGES for arg in ("-e", f"packages/{package}")]
    session.install("--no-build-isolation", *editable)


PYTEST_OPTIONS = ("-n", "auto", "--dist", "worksteal", "--durations=20")
"""One pytest worker per CPU (xdist; ``PYTEST_XDIST_AUTO_NUM_WORKERS`` caps it), an idle
worker taking tests queued for a busy one (a worker that drew the minute-long tests
does not leave the other idle at the end), and the 20 slowest tests listed at the
end, so a test that grows slow shows in CI's log."""


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on the CPU (Triton's interpreter; torch, paddle and jax)."""
    install_cpu_stack(session)
    session.run("pytest", *PYTEST_OPTIONS, *test_paths(), *session.posargs, env=CPU_ENV)


@nox.session(venv_backend="none")
def gpu(session: nox.Session) -> None:
    """Run the test suite on a CUDA GPU, in the current environment (installs nothing)."""
    isolate(session)
    # A plain script, so that GPU machines without nox can run it directly.
    session.run(HOST_PYTHON, "tools/gpu_tests.py", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Check style and formatting with ruff, and types with mypy (no changes made)."""
    isolate(session)
    session.install(*LINT_REQUIREMENTS, *TYPECHECK_REQUIREMENTS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # Strict on packages/*/src and the conformance tests (pyproject.toml).
    session.run("mypy")


MKDOCS_BUILD = ("mkdocs", "build", "--strict")
"""The site's build: ``--strict`` turns every warning into a failure (not
``--quiet``, which would hide the warnings that failed it)."""


@nox.session
def docs(session: nox.Session) -> None:
    """Build the guide, tutorials and API reference into site/ (any warning fails)."""
    isolate(session)
    session.install(*DOCS_REQUIREMENTS)
    session.install("--no-build-isolation", "--no-deps", "-e", "packages/nt-core", "-e",
                    "packages/nt-triton", "pluggy", "numpy")  # fmt: skip
    session.run(*MKDOCS_BUILD)
    session.run("python", "tools/check_api_docs.py", "site")
    # The build's strictness is itself tested: a broken link and a page left out
    # of the navigation must each fail MKDOCS_BUILD (tests/docs/test_docs_build.py).
    session.run(
        "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
        "tests/docs/test_docs_build.py",
    )  # fmt: skip


PACKAGE_REQUIREMENTS = ["build", "twine>=6.1", "readme-renderer[md]", "setuptools>=77"]
"""Building and checking the distributions (twine 6.1 reads metadata 2.4's licence
expressions; readme-renderer[md] renders Markdown long descriptions)."""


@nox.session
def package(session: nox.Session) -> None:
    """Build every package's wheel and sdist into dist/ and check them as an index would."""
    isolate(session)
    session.install(*PACKAGE_REQUIREMENTS)
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for package in PACKAGES:
        # No isolation: the session's setuptools builds, with no download per package.
        session.run("python", "-m", "build", "--no-isolation", "--outdir", str(dist),
                    f"packages/{package}", silent=True)  # fmt: skip
    archives = sorted(str(path) for path in dist.iterdir())
    session.run("twine", "check", "--strict", *archives)
    # The licence in each, one version everywhere, long descriptions without relative links.
    session.run("python", "tools/check_packages.py", str(dist))
    # The wheels install and import; the command runs (frameworks are not needed for that).
    wheels = [archive for archive in archives if archive.endswith(".whl")]
    session.install("--no-deps", "--force-reinstall", *wheels)
    session.install("pluggy", "numpy")
    session.run("python", "-c", "import ninetoothed, nt_triton, nt_torch, nt_paddle, nt_jax")
    session.run("ninetoothed", "--version")


@nox.session
def demo(session: nox.Session) -> None:
    """Run every op of the kernel library (nt_torch.ops) and check it against torch."""
    install_cpu_stack(session)
    # demo.py picks the GPU when torch sees one, and Triton's interpreter otherwise.
    session.run("python", "demo.py", *session.posargs)


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Run the paper's evaluation on the GPU, in the current environment (installs nothing).

    ``benchmarks/launch.py`` prints the launch and tuning engine's table
    (``NT_LAUNCH_ARGS`` are its arguments; ``NT_LAUNCH=0`` skips it); then
    ``benchmarks/run.py`` (arguments after ``--`` go to it) writes the
    single-kernel table; then ``benchmarks/e2e.py`` the end-to-end one
    (``NT_E2E_ARGS`` are its arguments; ``NT_E2E=0`` skips it), and
    ``benchmarks/code_metrics.py`` Table 2 where radon is installed.  Output
    goes to ``$OUT`` (else ``bench-out/``).
    """
    isolate(session)
    # The launch and tuning engine's table (issue 12) first: per-call µs, first calls, make.
    if os.environ.get("NT_LAUNCH", "1") != "0":
        session.run(
            HOST_PYTHON, "benchmarks/launch.py", *os.environ.get("NT_LAUNCH_ARGS", "").split()
        )
    session.run(HOST_PYTHON, "benchmarks/run.py", *session.posargs)
    if os.environ.get("NT_E2E", "1") != "0":
        e2e_args = os.environ.get("NT_E2E_ARGS", "").split()
        session.run(HOST_PYTHON, "benchmarks/e2e.py", *e2e_args)
    session.run(HOST_PYTHON, "benchmarks/code_metrics.py")  # says so when radon is missing
