"""The ahead-of-time tests: a stand-in libcuda off the GPU, and libraries built once.

Off the GPU every library called in the test process loads the stand-in
(``NINETOOTHED_LIBCUDA``), which records launches; tests of what happens
without a driver run in a subprocess with their own environment.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from support import aot_kernels as k
from support.aot import FakeCuda, build_fake_cuda
from support.aot_parity import Harness, make_aot
from support.base import ON_GPU

import ninetoothed
from ninetoothed.runtime.hookspecs import HostReads
from nt_torch import fastpath
from nt_torch.adapter import TorchAdapter


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


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory, fake_cuda: FakeCuda) -> dict[str, Harness]:
    """The test kernels (``support.aot_kernels``), each made ahead of time (for sm_90,
    into a directory that did not exist) and just in time."""
    directory = tmp_path_factory.mktemp("aot") / "not" / "yet"
    made = {}
    for name, arrangement, application, tensors in (
        ("add", k.add_arrangement, k.add_application, k.add_tensors),
        ("flat", k.flat_arrangement, k.copy_application, k.flat_tensors),
        ("mm", k.mm_arrangement, k.mm_application, k.mm_tensors),
        ("rows", k.rows_arrangement, k.copy_application, k.rows_tensors),
        ("scale", k.scale_arrangement, k.scale_application, k.scale_tensors),
    ):
        aot = make_aot(arrangement, application, tensors(), directory, name)
        jit = ninetoothed.make(arrangement, application, tensors(), kernel_name=name)
        made[name] = Harness(aot, jit, fake_cuda)
    return made


STREAM = 0x5EED
"""The stream PyTorch's current one is, under :func:`on_gpu`."""


@pytest.fixture
def on_gpu(monkeypatch):
    """Torch tensors described as on cuda:0, PyTorch's current stream :data:`STREAM`
    (the value)."""
    describe = TorchAdapter.describe

    def moved(self, obj):
        return describe(self, obj)._replace(device="cuda:0")

    def key(tensor):
        return (tensor.shape, tensor.stride(), tensor.dtype, "cuda:0")

    # The fast reads of PyTorch on a GPU (nt_torch.fastpath), with the stream above.
    reads = HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=fastpath.KEY_READS,
        device_of=lambda tensor: 0,
        raw_stream=lambda device: STREAM,
        current_device=None,
        device_guard=lambda device: contextlib.nullcontext(),
        guard=fastpath.guard_factory(),
    )
    monkeypatch.setattr(TorchAdapter, "host_reads", lambda self: reads)
    monkeypatch.setattr(TorchAdapter, "describe", moved)
    monkeypatch.setattr(TorchAdapter, "aot_reads", lambda self: (key, torch.Tensor.data_ptr))
    monkeypatch.setattr(TorchAdapter, "current_stream", lambda self, device: STREAM)
    monkeypatch.setattr(TorchAdapter, "device_guard", lambda self, device: None)
    return STREAM
