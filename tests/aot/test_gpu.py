"""C libraries on the GPU: from Python, from ctypes, from a C and a C++ program.

The libraries (``support.aot_gpu``: add, a tuned mm build, attention) are
built once for the current GPU; every result is compared with a float64 or
framework reference on fresh random inputs, outputs poisoned first.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading

import pytest
import torch
import torch.nn.functional as F
from support import aot_gpu as g
from support.base import ON_GPU

import ninetoothed

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("aot_gpu")
    add, mm, attention = g.make_all(directory)
    return directory, add, mm, attention


def _poisoned(*shape, dtype=torch.float32, device="cuda"):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


@pytest.mark.parametrize("size", [1, 255, 1024, 45327, 1 << 20])
def test_add_from_python(libraries, size):
    _, add, _, _ = libraries
    x, y = torch.randn(2 * size, device="cuda")[::2], torch.randn(size, device="cuda")
    z = _poisoned(size)
    add(x, y, z)
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize(
    ("m", "n", "k"), [(512, 512, 512), (100, 70, 30), (1, 1, 1), (257, 129, 65)]
)
def test_a_tuned_mm_build_from_python(libraries, dtype, m, n, k):
    _, _, mm, _ = libraries
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t()  # a transposed operand
    c = _poisoned(m, n, dtype=dtype)
    mm(a, b, c, getattr(ninetoothed, str(dtype).split(".")[-1]))
    reference = (a.double() @ b.double()).to(dtype)
    tolerance = {torch.float16: 2e-2, torch.bfloat16: 5e-2, torch.float32: 2e-2}[dtype]
    torch.testing.assert_close(c, reference, rtol=tolerance, atol=tolerance * (k**0.5))


def test_the_tuned_table_is_beside_the_library(libraries):
    directory, _, mm, _ = libraries
    rows = (directory / "mm.csv").read_text().splitlines()
    assert rows[0] == "dtype_,launched,milliseconds,candidates"
    assert len(rows) == 4 and all(row.count(",") >= 3 and row.endswith(",8") for row in rows[1:])
    assert all(float(row.rsplit(",", 2)[1]) > 0 for row in rows[1:])  # timed on this GPU


@pytest.mark.parametrize("seq", [1, 64, 100, 257])
def test_attention_from_python(libraries, seq):
    _, _, _, attention = libraries
    q, k, v = (torch.randn(2, 3, seq, 64, device="cuda") for _ in range(3))
    o = _poisoned(2, 3, seq, 64)
    attention(q, k, v, 0.125, o)
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=0.125)
    torch.testing.assert_close(o, reference.float(), rtol=2e-2, atol=2e-2)


def _laid_out(layout, shape):
    """A tensor of ``shape`` laid out as ``layout`` names (what picks a specialisation)."""
    if layout == "odd stride":  # rows 72 elements apart: not a multiple of 16
        return torch.randn(*shape[:-1], shape[-1] + 8, device="cuda")[..., : shape[-1]]
    if layout == "misaligned":  # the data 4 bytes past a 16-byte boundary
        count = shape[0] * shape[1] * shape[2] * shape[3]
        return torch.randn(count + 1, device="cuda")[1:].view(shape)
    return torch.randn(*shape, device="cuda")


@pytest.mark.parametrize("layout", ["contiguous", "odd stride", "misaligned"])
@pytest.mark.parametrize("seq", [128, 100])
def test_attention_whatever_the_alignment(libraries, layout, seq):
    """Aligned strides with a batch and heads not divisible by 16 (the specialisations
    told the strides' divisibility), masked rows, odd strides and a pointer off 16 bytes
    (the specialisation told nothing): the same results."""
    _, _, _, attention = libraries
    shape = (3, 5, seq, 64)
    q, k, v = (_laid_out(layout, shape) for _ in range(3))
    o = _laid_out(layout, shape).fill_(float("nan"))
    attention(q, k, v, 0.125, o)
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=0.125)
    torch.testing.assert_close(o, reference.float(), rtol=2e-2, atol=2e-2)


def test_the_ctypes_path(libraries):
    """The library called through ctypes directly, on PyTorch's current stream."""
    directory, _, _, _ = libraries
    from ninetoothed.aot import NineToothedTensor

    library = ctypes.CDLL(str(directory / "add.so"))
    x, y, z = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda"), _poisoned(4096)

    def tensor(t):
        return NineToothedTensor(
            t.data_ptr(), (ctypes.c_uint64 * 1)(t.numel()), (ctypes.c_int64 * 1)(1)
        )

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        status = library.launch_add(
            ctypes.c_void_p(stream.cuda_stream), tensor(x), tensor(y), tensor(z)
        )
    assert status == 0
    stream.synchronize()
    torch.testing.assert_close(z, x + y)


def test_repeated_calls_of_alternating_shapes(libraries):
    """The callable's fast path on the GPU: the latest call's facts confirmed by the
    guard, others found by key, new tensors (pointers) every call."""
    _, add, _, _ = libraries
    for size in (4096, 1000, 4096, 1000, 4096, 12345, 1000):
        x, y, z = (
            torch.randn(size, device="cuda"),
            torch.randn(size, device="cuda"),
            _poisoned(size),
        )
        add(x, y, z)
        torch.testing.assert_close(z, x + y, rtol=0, atol=0)
    assert len(add._fast.plans) >= 3


def test_threads_call_at_once(libraries):
    _, add, _, _ = libraries
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                x, y, z = (
                    torch.randn(5000, device="cuda"),
                    torch.randn(5000, device="cuda"),
                    _poisoned(5000),
                )
                add(x, y, z)
                results.append(bool(torch.equal(z, x + y)))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 160 and all(results)


def test_a_thread_new_to_the_gpu(libraries):
    """A thread that never used CUDA has no current context: the callable makes the
    tensors' device's primary context current."""
    _, add, _, _ = libraries
    x, y, z = torch.randn(7000, device="cuda"), torch.randn(7000, device="cuda"), _poisoned(7000)
    torch.cuda.synchronize()
    errors = []
    thread = threading.Thread(target=lambda: _record(errors, add, x, y, z))
    thread.start()
    thread.join()
    assert not errors, errors
    torch.testing.assert_close(z, x + y)


def _record(errors, kernel, *arguments):
    try:
        kernel(*arguments)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - reported by the test
        errors.append(error)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_devices_in_one_process(libraries):
    _, add, _, _ = libraries
    for device in ("cuda:0", "cuda:1", "cuda:0"):
        x, y = torch.randn(3000, device=device), torch.randn(3000, device=device)
        z = _poisoned(3000, device=device)
        add(x, y, z)
        torch.testing.assert_close(z, x + y)


@pytest.mark.parametrize(
    ("source", "compiler"), [("aot_consumer.c", "cc"), ("aot_consumer.cpp", "c++")]
)
def test_c_and_cpp_programs(libraries, tmp_path, source, compiler):
    """Compiled with the system compiler, linked against the three libraries and libcuda."""
    directory = libraries[0]
    if shutil.which(compiler) is None:
        pytest.fail(f"no {compiler} on PATH")
    program = tmp_path / "consumer"
    command = g.consumer_command(source, directory, program, [f"-L{g.libcuda_directory()}"])
    subprocess.run(command, check=True)
    environment = {k: v for k, v in os.environ.items() if k != "NINETOOTHED_LIBCUDA"}
    result = subprocess.run(
        [str(program)], capture_output=True, text=True, env=environment, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
