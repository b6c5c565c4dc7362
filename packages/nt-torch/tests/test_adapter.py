"""Tests of the PyTorch adapter, under Triton's interpreter (no GPU needed).

The GPU path is tested without a GPU by faking what only a GPU gives: the
tensors' CUDA device, PyTorch's current device, and the kernel's launch
(recorded instead of run).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import ninetoothed
import nt_torch
from ninetoothed import Tensor
from ninetoothed.errors import DeclaredDtypeWarning, LaunchError
from ninetoothed.runtime.hookspecs import HostReads
from nt_torch import _tensor_info as descriptions
from nt_torch.adapter import TorchAdapter
from nt_triton import knobs

pytestmark = pytest.mark.interpreter_only

ADAPTER = TorchAdapter()


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    """Tile three vectors into blocks of one meta size."""
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    """``z = x + y``, block by block."""
    z = x + y  # noqa: F841


kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


# describe ------------------------------------------------------------------


def test_describe_contiguous_and_views() -> None:
    base = torch.arange(12, dtype=torch.float16).reshape(3, 4)
    info = ADAPTER.describe(base)
    assert info == ((3, 4), (4, 1), "float16", "cpu", base.data_ptr())
    transposed = ADAPTER.describe(base.t())
    assert (transposed.shape, transposed.strides) == ((4, 3), (1, 4))
    offset = ADAPTER.describe(base[1:, 1:])
    assert offset.data_ptr == base.data_ptr() + (4 + 1) * 2


@pytest.mark.parametrize(
    "dtype", [torch.bool, torch.uint8, torch.int32, torch.bfloat16, torch.float8_e5m2]
)
def test_describe_dtype_names(dtype: torch.dtype) -> None:
    assert ADAPTER.describe(torch.zeros(2, dtype=dtype)).dtype == str(dtype).split(".")[-1]


def test_recognizes_torch_tensors_and_subclasses() -> None:
    class Mine(torch.Tensor):
        pass

    assert ADAPTER.recognizes(torch.ones(1))
    assert ADAPTER.recognizes(torch.ones(1).as_subclass(Mine))
    assert not ADAPTER.recognizes(np.ones(1))


# calls ---------------------------------------------------------------------


def test_writes_into_the_tensors_passed_in() -> None:
    x, y = torch.arange(17.0), torch.full((17,), 2.0)
    buffer = torch.full((34,), float("nan"))
    z = buffer[::2]  # a strided output inside a larger buffer
    assert kernel(x, y, z) is None
    expected = torch.full((34,), float("nan"))
    expected[::2] = x + 2
    torch.testing.assert_close(buffer, expected, equal_nan=True)


def test_framework_dtype_declared_on_a_tensor() -> None:
    """``Tensor(dtype=torch.float16)`` is the canonical ``float16``, so calls match it."""
    typed = ninetoothed.make(
        arrangement, application, tuple(Tensor(1, dtype=torch.float16) for _ in range(3))
    )
    x = torch.ones(8, dtype=torch.float16)
    typed(x, x, z := torch.empty_like(x))
    torch.testing.assert_close(z, 2 * x)
    y = torch.arange(8, dtype=torch.float64) / 3
    with pytest.warns(DeclaredDtypeWarning, match="expects dtype float16, got float64"):
        typed(y, y, z := torch.full_like(y, float("nan")))
    torch.testing.assert_close(z, 2 * y, rtol=0, atol=0)  # in float64, not float16


def test_dtype_triton_cannot_take() -> None:
    x = torch.ones(4, dtype=torch.complex64)
    with pytest.raises(LaunchError, match="complex64, which Triton kernels cannot take"):
        kernel(x, x, x)


def test_mixing_frameworks_names_both() -> None:
    jnp = pytest.importorskip("jax.numpy")
    x = torch.ones(4)
    with pytest.raises(LaunchError, match="cannot mix") as caught:
        ADAPTER.call(kernel.generated, (x, jnp.ones(4), x), {})
    assert "torch tensors" in str(caught.value) and "jax tensor" in str(caught.value)


def test_package_reexports_make_and_jit() -> None:
    assert nt_torch.make is ninetoothed.make
    assert nt_torch.jit is ninetoothed.jit
    assert (ADAPTER.name, ADAPTER.distribution) == ("torch", "nt-torch")


# the GPU path, without a GPU -----------------------------------------------


READS = HostReads(
    pointer_read="{}.data_ptr()",
    key_reads=("{}.shape",),
    device_of=lambda tensor: 1,
    raw_stream=lambda device: 0,
    current_device=None,
    device_guard=lambda device: contextlib.nullcontext(),
)
"""PyTorch's fast-path reads as a fake GPU answers them (a kernel without a fast path
never reads them)."""


class RecordingKernel:
    """A stand-in for a generated kernel: the real spec and host code, a launch that records."""

    def __init__(self) -> None:
        self.real = kernel.generated
        self.spec = self.real.spec
        self.launches: list[dict[str, Any]] = []

    @property
    def interpreting(self) -> bool:
        return bool(self.real.interpreting)

    def prepare(self, tensors: Any, launch_args: Any, scalars: Any) -> Any:
        return self.real.prepare(tensors, launch_args, scalars)

    def launch(self, plan: Any, stream: int = 0) -> None:
        device = torch.cuda.current_device()
        self.launches.append({"plan": plan, "stream": stream, "device": device})

    def fast_launcher(self, reads: Any, miss: Any) -> None:
        """No fast path: every call takes ``prepare`` and ``launch``."""
        return None


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Tensors report GPU 1, PyTorch's current device is 0, and nothing interprets."""
    state: dict[str, Any] = {"current": 0, "switched": []}

    @contextlib.contextmanager
    def device(index: int) -> Iterator[None]:
        previous, state["current"] = state["current"], index
        state["switched"].append(index)
        try:
            yield
        finally:
            state["current"] = previous

    describe = TorchAdapter.describe
    monkeypatch.setattr(knobs, "interpreting", lambda: False)
    monkeypatch.setattr(
        TorchAdapter, "describe", lambda self, obj: describe(self, obj)._replace(device="cuda:1")
    )
    monkeypatch.setattr(torch.cuda, "current_device", lambda: state["current"])
    monkeypatch.setattr(torch.cuda, "device", device)
    # The fast path's reads ask CUDA's runtime, which a CPU build has not.
    monkeypatch.setattr(TorchAdapter, "host_reads", lambda self: READS)
    return state


def test_gpu_launch_gets_the_tensors_and_their_device(fake_gpu: dict[str, Any]) -> None:
    recorder = RecordingKernel()
    x, y, z = torch.ones(8), torch.ones(8), torch.zeros(16)[::2]
    (block_size,) = kernel.spec.meta_symbols
    assert ADAPTER.call(recorder, (x, y, z), {block_size: 4}) is None
    (launch,) = recorder.launches
    assert launch["device"] == 1, "the launch happens with the tensors' GPU current"
    assert fake_gpu["current"] == 0, "the previous device is restored"
    assert launch["stream"] == 0, "Triton reads PyTorch's current stream itself"
    plan = launch["plan"]
    assert plan.arguments[:3] == [x, y, z], "Triton takes torch tensors as pointers"
    assert plan.meta == {block_size: 4}
    assert recorder.real.concrete_grid(plan)[0] == (2,)


def test_gpu_launch_on_the_current_device_switches_nothing(fake_gpu: dict[str, Any]) -> None:
    fake_gpu["current"] = 1
    recorder = RecordingKernel()
    x = torch.ones(8)
    ADAPTER.call(recorder, (x, x, x), {})
    assert recorder.launches[0]["device"] == 1 and fake_gpu["switched"] == []


def test_cpu_tensors_to_a_gpu_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knobs, "interpreting", lambda: False)
    recorder = RecordingKernel()
    x = torch.ones(4)
    with pytest.raises(LaunchError, match="on cpu, but kernels run on a GPU; move them to CUDA"):
        ADAPTER.call(recorder, (x, x, x), {})
    assert recorder.launches == []


def test_device_names_are_cached() -> None:
    assert descriptions._device_name(torch.device("cpu")) == "cpu"
    assert descriptions._DEVICE_NAMES[torch.device("cpu")] == "cpu"
    assert descriptions._device_name(torch.device("cuda", 1)) == "cuda:1"
