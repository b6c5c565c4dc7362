"""Tests of the PaddlePaddle adapter, under Triton's interpreter (no GPU needed).

The GPU path is tested without a GPU by faking what only a GPU can give: a
tensor's CUDA place, Paddle's current stream and CUDA current device, and the
kernel's launch (recorded instead of run).
"""

# The skip for a missing Paddle must precede the imports that need Paddle.
# ruff: noqa: E402

from __future__ import annotations

import contextlib
import sys
from typing import Any

import numpy as np
import pytest

# Machines without Paddle (our GPU machine) skip this module, with the reason.
paddle = pytest.importorskip("paddle", reason="paddle is not installed here")

import ninetoothed
import ninetoothed.language as ntl
import nt_paddle
from ninetoothed import Tensor
from ninetoothed.arrangement.dtype import TRITON_DTYPES
from ninetoothed.errors import DeclaredDtypeWarning, LaunchError
from ninetoothed.runtime.hookspecs import HostReads
from nt_paddle import adapter as adapter_module
from nt_paddle.adapter import PaddleAdapter, PaddlePointer
from nt_triton import knobs

pytestmark = pytest.mark.interpreter_only

ADAPTER = PaddleAdapter()


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    """Tile three vectors into blocks of one meta size."""
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    """``z = x + y``, block by block."""
    z = x + y  # noqa: F841


def copy_application(x, y, z):
    """``z = x``: moves bits without arithmetic (``y`` is unused)."""
    z = x  # noqa: F841


kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
copy_kernel = ninetoothed.make(arrangement, copy_application, (Tensor(1), Tensor(1), Tensor(1)))
typed_kernel = ninetoothed.make(
    arrangement,
    application,
    (Tensor(1, dtype=ntl.float32), Tensor(1, dtype=ntl.float32), Tensor(1, dtype=ntl.float32)),
)


def poisoned(size: int, dtype: str = "float32") -> paddle.Tensor:
    """An output tensor a kernel must overwrite: NaN everywhere."""
    return paddle.full([size], float("nan"), dtype=dtype)


def random(size: int, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """Small random values that every dtype under test represents."""
    values = np.random.default_rng(seed).integers(-50, 50, size)
    return values.astype(np.float64) / (4 if dtype.startswith(("float", "bfloat")) else 1)


def to_paddle(values: np.ndarray, dtype: str) -> paddle.Tensor:
    """``values`` as a Paddle CPU tensor of ``dtype`` (bfloat16 by way of float32)."""
    return paddle.to_tensor(values.astype(np.float32)).astype(dtype)


def values_of(tensor: paddle.Tensor) -> np.ndarray:
    """A tensor's values as float64 numpy."""
    return tensor.astype("float64").numpy() if tensor.dtype != paddle.bool else tensor.numpy()


# describe ------------------------------------------------------------------


def test_recognizes_paddle_tensors_only() -> None:
    assert ADAPTER.recognizes(paddle.ones([2]))
    assert not ADAPTER.recognizes(np.ones(2))
    assert not ADAPTER.recognizes(3.0)


def test_describe_contiguous() -> None:
    x = paddle.ones([3, 4], dtype="float32")
    info = ADAPTER.describe(x)
    assert info.shape == (3, 4)
    assert info.strides == (4, 1)
    assert info.dtype == "float32"
    assert info.device == "cpu"
    assert info.data_ptr == x.data_ptr()


def test_describe_strided_views_share_memory() -> None:
    base = paddle.arange(12, dtype="float32").reshape([3, 4])
    transposed = base.transpose([1, 0])
    assert not transposed.is_contiguous()
    info = ADAPTER.describe(transposed)
    assert (info.shape, info.strides, info.data_ptr) == ((4, 3), (1, 4), base.data_ptr())

    stepped = base[:, ::2]
    info = ADAPTER.describe(stepped)
    assert (info.shape, info.strides, info.data_ptr) == ((3, 2), (4, 2), base.data_ptr())

    # A view that starts inside its base: the pointer is that of its first element.
    offset = base[1:, 1:]
    info = ADAPTER.describe(offset)
    assert (info.shape, info.strides) == ((2, 3), (4, 1))
    assert info.data_ptr == base.data_ptr() + (4 + 1) * 4


def test_describe_zero_dimensional() -> None:
    info = ADAPTER.describe(paddle.to_tensor(2.0))
    assert (info.shape, info.strides, info.dtype) == ((), (), "float32")


@pytest.mark.parametrize(
    "dtype",
    [
        "bool",
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "float8_e4m3fn",
        "float8_e5m2",
        "complex64",
    ],
)
def test_describe_dtypes(dtype: str) -> None:
    x = paddle.zeros([5], dtype=dtype)
    assert ADAPTER.describe(x).dtype == dtype
    assert (dtype in TRITON_DTYPES) == (not dtype.startswith("complex"))


def test_describe_rejects_sparse_tensors() -> None:
    sparse = paddle.sparse.sparse_coo_tensor([[0, 2]], [1.0, 2.0], [4])
    with pytest.raises(LaunchError, match="sparse"):
        ADAPTER.describe(sparse)


def test_launch_stream_on_cpu_is_zero() -> None:
    assert ADAPTER.launch_stream("cpu") == 0


# kernels -------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 17, 1000])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_vector_add_writes_into_the_callers_tensor(size: int, dtype: str) -> None:
    a, b = random(size, dtype, 1), random(size, dtype, 2)
    x, y = to_paddle(a, dtype), to_paddle(b, dtype)
    z = poisoned(size, dtype) if not dtype.startswith("int") else paddle.full([size], -7, dtype)
    pointer = z.data_ptr()
    assert kernel(x, y, z) is None
    assert z.data_ptr() == pointer, "the output must be written in place"
    np.testing.assert_allclose(values_of(z), a + b, rtol=1e-3 if dtype == "float16" else 1e-7)


def test_bfloat16_round_trip() -> None:
    # A copy checks what the adapter is responsible for, bit for bit: pointers,
    # dtype, write-back (bfloat16 arithmetic: tests/test_interpreted_bfloat16.py).
    a = random(17, "bfloat16")
    x = to_paddle(a, "bfloat16")
    z = poisoned(17, "bfloat16")
    copy_kernel(x, x, z)
    np.testing.assert_array_equal(values_of(z), a)


def test_non_contiguous_input_and_output() -> None:
    a, b = random(17, seed=1), random(17, seed=2)
    x = paddle.to_tensor(np.repeat(a, 2).astype(np.float32))[::2]
    y = paddle.to_tensor(b.astype(np.float32))
    buffer = poisoned(34 * 3).reshape([34, 3])
    z = buffer[1::2, 2]  # a strided output inside a larger buffer
    assert not x.is_contiguous() and not z.is_contiguous()
    kernel(x, y, z)
    expected = np.full((34, 3), np.nan)
    expected[1::2, 2] = a + b
    np.testing.assert_allclose(buffer.numpy(), expected)


def test_non_contiguous_support_helper() -> None:
    from support.paddle_support import PaddleSupport

    support = PaddleSupport()
    vector = support.non_contiguous(np.arange(5, dtype=np.float32))
    matrix = support.non_contiguous(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert not vector.is_contiguous() and not matrix.is_contiguous()
    np.testing.assert_array_equal(support.to_numpy(matrix), np.arange(12).reshape(3, 4))
    a = np.arange(17, dtype=np.float32)
    out = support.poisoned([17], "float32")
    args = [support.from_numpy(a), support.non_contiguous(a), out]
    (result,) = support.call(kernel, args, {}, [2])
    np.testing.assert_array_equal(result, 2 * a)


def test_empty_tensors_launch_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty tensors reach the launch, whose grid has no program, and nothing else."""
    generated = kernel.generated
    grids: list[tuple[int, ...]] = []
    launch = generated.launch

    def spy(plan: Any, stream: int = 0) -> None:
        grids.append(generated.concrete_grid(plan)[0])
        launch(plan, stream)

    monkeypatch.setattr(generated, "launch", spy)
    x, y, z = paddle.zeros([0]), paddle.zeros([0]), paddle.zeros([0])
    assert kernel(x, y, z) is None
    assert grids == [(0,)], "one launch, of no programs"
    assert z.shape == [0]


def test_nt_paddle_make_and_jit() -> None:
    made = nt_paddle.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    assert isinstance(made, ninetoothed.Kernel)
    x = paddle.arange(17, dtype="float32")
    z = poisoned(17)
    made(x, x, z)
    np.testing.assert_array_equal(z.numpy(), 2 * np.arange(17))
    assert nt_paddle.__version__


@pytest.mark.parametrize("failure", ["copies", "raises"])
def test_dlpack_that_is_not_zero_copy_falls_back_to_a_copy(
    monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """Older Paddle releases' DLPack copied strided views: results must still land."""
    import torch

    original = torch.from_dlpack

    def from_dlpack(tensor: Any) -> Any:
        if isinstance(tensor, paddle.Tensor) and not tensor.is_contiguous():
            if failure == "raises":
                raise BufferError("strided tensors are not exported")
            return original(tensor).clone()
        return original(tensor)

    monkeypatch.setattr(torch, "from_dlpack", from_dlpack)
    a = random(17)
    x = paddle.to_tensor(a.astype(np.float32))
    buffer = poisoned(34)
    z = buffer[::2]
    kernel(x, x, z)
    expected = np.full(34, np.nan)
    expected[::2] = 2 * a
    np.testing.assert_allclose(buffer.numpy(), expected)


def test_interpreter_without_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    x = paddle.ones([4])
    with pytest.raises(LaunchError, match=r"needs PyTorch.*nt-paddle\[interpreter\]"):
        kernel(x, x, x)


# errors --------------------------------------------------------------------


def test_wrong_argument_count() -> None:
    x = paddle.ones([4])
    with pytest.raises(LaunchError, match="3 positional arguments"):
        kernel(x, x)


def test_wrong_rank() -> None:
    x = paddle.ones([4])
    with pytest.raises(LaunchError, match="expects 1 dimensions"):
        kernel(x, paddle.ones([2, 2]), x)


def test_mixing_torch_and_paddle_names_both_frameworks() -> None:
    import torch

    x = paddle.ones([4])
    with pytest.raises(LaunchError, match="paddle") as caught:
        kernel(x, torch.ones(4), x)
    assert "torch" in str(caught.value)
    # Also when the kernel already knows paddle tensors (its adapter is cached by type).
    kernel(x, x, paddle.zeros([4]))
    with pytest.raises(LaunchError, match="torch") as caught:
        kernel(x, torch.ones(4), x)
    assert "paddle" in str(caught.value)


def test_a_dtype_other_than_declared_runs_with_a_warning() -> None:
    x = paddle.arange(4, dtype="float64") / 3
    z = paddle.full([4], float("nan"), dtype="float64")
    with pytest.warns(DeclaredDtypeWarning, match="expects dtype float32, got float64"):
        typed_kernel(x, x, z)
    np.testing.assert_array_equal(z.numpy(), 2 * x.numpy())  # computed in float64
    y = paddle.ones([4], dtype="float32")
    typed_kernel(y, y, y)


def test_dtype_triton_cannot_take() -> None:
    x = paddle.ones([4], dtype="complex64")
    with pytest.raises(LaunchError, match="complex64, which Triton kernels cannot take"):
        kernel(x, x, x)


def test_cpu_tensors_to_a_gpu_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knobs, "interpreting", lambda: False)
    recorder = RecordingKernel()
    x = paddle.ones([4])
    with pytest.raises(LaunchError, match="tensors are on cpu, but kernels run on a GPU"):
        ADAPTER.call(recorder, (x, x, x), {})
    assert recorder.launches == []
    # The real kernel too: the error comes before anything reaches Triton.
    monkeypatch.setattr(kernel.generated, "launch", _must_not_launch)
    with pytest.raises(LaunchError, match="TRITON_INTERPRET=1"):
        kernel(x, x, x)


# the GPU path, without a GPU -----------------------------------------------


class RecordingKernel:
    """A stand-in for a generated kernel: the real spec, a launch that records."""

    def __init__(self, source: ninetoothed.Kernel = kernel) -> None:
        self.real = source.generated
        self.spec = source.spec
        self.source = self.real.source
        self.source_path = self.real.source_path
        self.launches: list[dict[str, Any]] = []

    @property
    def interpreting(self) -> bool:
        return bool(self.real.interpreting)

    def prepare(self, tensors: Any, launch_args: Any, scalars: Any) -> dict[str, Any]:
        return {"tensors": tensors, "launch_args": launch_args, "scalars": scalars}

    def launch(self, plan: dict[str, Any], stream: int = 0) -> None:
        device = adapter_module.paddle.base.core.get_cuda_current_device_id()
        self.launches.append({**plan, "stream": stream, "device": device})

    def fast_launcher(self, reads: Any, miss: Any) -> None:
        """No fast path: every call takes ``prepare`` and ``launch``."""
        return None


def _must_not_launch(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("Triton must not be reached")


class FakeStream:
    """What ``paddle.device.current_stream`` returns: speaks the CUDA stream protocol."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


class FakePlace:
    """A Paddle place of any kind (a CPU-only Paddle refuses to make GPU places)."""

    def __init__(self, kind: str, index: int = 0, device_type: str = "") -> None:
        self.kind, self.index, self.device_type = kind, index, device_type

    def is_gpu_place(self) -> bool:
        return self.kind == "gpu"

    def is_cpu_place(self) -> bool:
        return self.kind == "cpu"

    def is_cuda_pinned_place(self) -> bool:
        return self.kind == "pinned"

    def is_xpu_place(self) -> bool:
        return self.kind == "xpu"

    def is_custom_place(self) -> bool:
        return self.kind == "custom"

    def gpu_device_id(self) -> int:
        return self.index

    def xpu_device_id(self) -> int:
        return self.index

    def custom_device_type(self) -> str:
        return self.device_type

    def custom_device_id(self) -> int:
        return self.index

    def __str__(self) -> str:
        return f"Place({self.kind})"


@pytest.mark.parametrize(
    ("place", "expected"),
    [
        (FakePlace("gpu", 1), "cuda:1"),
        (FakePlace("gpu", 0), "cuda:0"),
        (FakePlace("cpu"), "cpu"),
        (FakePlace("pinned"), "cpu"),
        (FakePlace("xpu", 2), "xpu:2"),
        (FakePlace("custom", 3, "npu"), "npu:3"),
        (FakePlace("ipu"), "Place(ipu)"),
    ],
)
def test_device_names_of_places(place: FakePlace, expected: str) -> None:
    assert adapter_module._device_name(place) == expected


def test_device_name_of_a_real_tensor() -> None:
    assert ADAPTER.describe(paddle.ones([2])).device == "cpu"


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Pretend every Paddle tensor lives on GPU 1, with a current stream, and no interpreter."""
    record: dict[str, Any] = {"stream_devices": [], "current_device": 0, "set_devices": []}

    def current_stream(device: Any = None) -> FakeStream:
        record["stream_devices"].append(device)
        return FakeStream(0xC0FFEE)

    def set_device(index: int) -> None:
        record["set_devices"].append(index)
        record["current_device"] = index

    core = paddle.base.core
    monkeypatch.setattr(knobs, "interpreting", lambda: False)
    # Every tensor's place reads as GPU 1; the adapter's own _device_name names it.
    device_name = adapter_module._device_name
    monkeypatch.setattr(
        adapter_module, "_device_name", lambda place: device_name(FakePlace("gpu", 1))
    )
    monkeypatch.setattr(paddle.device, "current_stream", current_stream)
    monkeypatch.setattr(
        core, "get_cuda_current_device_id", lambda: record["current_device"], raising=False
    )
    monkeypatch.setattr(core, "set_cuda_current_device_id", set_device, raising=False)
    # The fast path's reads ask CUDA, which a CPU build of Paddle has not.
    reads = HostReads("{}.data_ptr()", (), lambda t: 1, lambda d: 0, None, lambda d: _NO_GUARD)
    monkeypatch.setattr(PaddleAdapter, "host_reads", lambda self: reads)
    return record


_NO_GUARD = contextlib.nullcontext()


def test_gpu_launch_gets_pointers_stream_and_device(fake_gpu: dict[str, Any]) -> None:
    recorder = RecordingKernel()
    x = paddle.ones([8], dtype="float16")
    y = paddle.ones([8], dtype="float16")
    z = paddle.zeros([16], dtype="float16")[::2]
    (block_size,) = kernel.spec.meta_symbols  # pinning it skips auto-tuning
    ADAPTER.call(recorder, (x, y, z), {block_size: 4})

    (launch,) = recorder.launches
    assert fake_gpu["stream_devices"] == ["gpu:1"]
    assert launch["stream"] == 0xC0FFEE
    assert launch["device"] == 1, "the launch must happen with the tensors' GPU current"
    assert fake_gpu["current_device"] == 0, "the previous device is restored"
    assert launch["scalars"] == {block_size: 4}
    pointers = launch["launch_args"]
    assert all(isinstance(pointer, PaddlePointer) for pointer in pointers)
    assert [pointer.data_ptr() for pointer in pointers] == [t.data_ptr() for t in (x, y, z)]
    assert [str(pointer.dtype) for pointer in pointers] == ["float16"] * 3
    assert [info.strides for info in launch["tensors"]] == [(1,), (1,), (2,)]
    assert all(info.device == "cuda:1" for info in launch["tensors"])


def test_gpu_launch_on_the_current_device_switches_nothing(fake_gpu: dict[str, Any]) -> None:
    fake_gpu["current_device"] = 1
    recorder = RecordingKernel()
    x = paddle.ones([8])
    ADAPTER.call(recorder, (x, x, x), {})
    assert recorder.launches[0]["device"] == 1
    assert fake_gpu["set_devices"] == []


def test_gpu_launch_rejects_complex_before_launching(fake_gpu: dict[str, Any]) -> None:
    recorder = RecordingKernel()
    x = paddle.ones([8], dtype="complex64")
    with pytest.raises(LaunchError, match="complex64"):
        ADAPTER.call(recorder, (x, x, x), {})
    assert recorder.launches == [] and fake_gpu["stream_devices"] == []


def test_launch_stream_asks_paddle_for_the_device(fake_gpu: dict[str, Any]) -> None:
    assert ADAPTER.launch_stream("cuda:3") == 0xC0FFEE
    assert fake_gpu["stream_devices"] == ["gpu:3"]


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("float16", "*fp16"),
        ("bfloat16", "*bf16"),
        ("float32", "*fp32"),
        ("float64", "*fp64"),
        ("int8", "*i8"),
        ("int32", "*i32"),
        ("int64", "*i64"),
        ("uint8", "*u8"),
        ("bool", "*u1"),
        ("float8_e4m3fn", "*fp8e4nv"),
        ("float8_e5m2", "*fp8e5"),
    ],
)
def test_pointer_shim_is_a_triton_pointer(dtype: str, expected: str) -> None:
    """Triton types the shim from ``data_ptr`` and ``str(dtype)``, with no torch involved."""
    jit = pytest.importorskip("triton.runtime.jit")
    mangle_type = getattr(jit, "mangle_type", None)
    if mangle_type is None:
        pytest.skip("this Triton has no triton.runtime.jit.mangle_type")
    tensor = paddle.zeros([4], dtype=dtype)
    pointer = PaddlePointer(ADAPTER.describe(tensor).data_ptr, ADAPTER.describe(tensor).dtype)
    assert pointer.data_ptr() == tensor.data_ptr()
    assert mangle_type(pointer) == expected
    # Triton reads the part after the last dot, so Paddle's own spelling agrees.
    assert mangle_type(PaddlePointer(tensor.data_ptr(), str(tensor.dtype))) == expected
    assert dtype in TRITON_DTYPES


def test_the_fast_path_offers_the_job_s_group_of_ranks_once_there_is_one() -> None:
    """Tuning together reads Paddle's global group through ``HostReads.group``: None until
    ``paddle.distributed.init_parallel_env`` (``tests/test_tuning_together.py`` runs a job)."""
    from nt_paddle import fastpath
    from nt_paddle._distributed import process_group

    assert fastpath.host_reads(lambda device: contextlib.nullcontext()).group is process_group
    assert process_group() is None
