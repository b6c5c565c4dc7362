"""The ahead-of-time tests: a stand-in libcuda off the GPU, and libraries built once.

Off the GPU every library called in the test process loads the stand-in
(``NINETOOTHED_LIBCUDA``), which records launches; tests of what happens
without a driver run in a subprocess with their own environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.aot import FakeCuda, build_fake_cuda
from support.base import ON_GPU


@pytest.fixture(scope="session")
def fake_cuda_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The stand-in libcuda, which this process's libraries load (off the GPU)."""
    if ON_GPU:
        pytest.skip("the stand-in libcuda replaces the GPU: the GPU run launches for real")
    path = build_fake_cuda(tmp_path_factory.mktemp("fakecuda"))
    previous = os.environ.get("NINETOOTHED_LIBCUDA")
    os.environ["NINETOOTHED_LIBCUDA"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("NINETOOTHED_LIBCUDA", None)
    else:
        os.environ["NINETOOTHED_LIBCUDA"] = previous


@pytest.fixture(scope="session")
def fake_cuda(fake_cuda_path: Path) -> FakeCuda:
    """The stand-in libcuda's state."""
    return FakeCuda(fake_cuda_path)
