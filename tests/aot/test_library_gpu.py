"""The kernel library's C API on the GPU, against torch, through ctypes and from C++.

The library is built for the current GPU (float16, rows up to 4096, heads
of 64 and 128, up to two configurations timed per tuned kernel, fewer where
``NINETOOTHED_MAX_NUM_CONFIGS`` caps a space, as ``tools/gpu_tests.py``
does), or taken from ``NINETOOTHED_OPS_DIR`` when that names a whole library
built before (``benchmarks/aot.py --library DIR`` builds one).  Every op runs
on fresh random inputs, outputs poisoned first, edge sizes (empty tensors
included), and is compared with torch (in float64 where it matters).  This is
where every op of the library is built; on the CPU, ``test_library.py`` builds
one op of each kind and makes this test's calls of mm, max_pool2d, rotary
embedding and attention against the stand-in driver.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess

import pytest
import torch
import torch.nn.functional as F
from support.aot_gpu import libcuda_directory
from support.aot_library import CONSUMER, Ops, ops_tensor
from support.base import ON_GPU

from ninetoothed.aot import Status
from ninetoothed.library.build import Options, build_library

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU"),
    pytest.mark.timeout(1800),  # the first test builds the library
]

OPS = ["add", "silu", "swiglu", "mm", "bmm", "addmm", "conv2d", "max_pool2d", "softmax"]
OPS += ["rms_norm", "fused_add_rms_norm", "rotary_position_embedding"]
OPS += ["scaled_dot_product_attention"]
TOLERANCE = {torch.float16: 2e-2}


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    given = os.environ.get("NINETOOTHED_OPS_DIR")
    if given:
        library = build_library(given, None, ["float16"], None)
        return Ops(library), (torch.float16,)
    out = tmp_path_factory.mktemp("ops")
    options = Options(max_row=4096, configurations=2)
    return Ops(build_library(out, OPS, ["float16"], None, options)), (torch.float16,)


def T(tensor):
    """``tensor`` as the C API takes it."""
    dtype = str(tensor.dtype).split(".")[-1]
    return ops_tensor(tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), dtype)


def _poisoned(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def _close(got, want, dtype):
    torch.cuda.synchronize()
    tolerance = TOLERANCE[dtype]
    torch.testing.assert_close(got.double(), want.double(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    ("a", "b"),
    [((1000,), (1000,)), ((3, 1), (4,)), ((2, 3, 5), (2, 3, 5)), ((1,), (7, 9)), ((2, 0, 3),) * 2],
)
def test_elementwise(ops, a, b):
    library, dtypes = ops
    for dtype in dtypes:
        x, y = (
            torch.randn(a, device="cuda", dtype=dtype),
            torch.randn(b, device="cuda", dtype=dtype),
        )
        shape = torch.broadcast_shapes(a, b)
        out = _poisoned(shape, dtype)
        assert library.add(T(x), T(y), T(out)) == (0, "")
        _close(out, x.double() + y.double(), dtype)
        assert library.swiglu(T(x), T(y), T(out)) == (0, "")
        _close(out, x.double() * F.silu(y.double()), dtype)
        strided = torch.randn(a[::-1], device="cuda", dtype=dtype).t() if len(a) == 2 else x
        single = _poisoned(strided.shape, dtype)
        assert library.silu(T(strided), T(single)) == (0, "")
        _close(single, F.silu(strided.double()), dtype)


@pytest.mark.parametrize(
    ("m", "n", "k"),
    [(1, 64, 32), (3, 40, 70), (33, 70, 100), (512, 256, 128), (2048, 2048, 64)],
)
def test_gemms(ops, m, n, k):
    library, dtypes = ops
    for dtype in dtypes:
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(n, k, device="cuda", dtype=dtype).t()  # a transposed operand
        c = _poisoned((m, n), dtype)
        assert library.mm(T(a), T(b), T(c)) == (0, "")
        reference = a.double() @ b.double()
        _close(c / math.sqrt(k), reference / math.sqrt(k), dtype)
        bias = torch.randn(n, device="cuda", dtype=dtype)
        assert library.addmm(T(bias), T(a), T(b), 0.5, 2.0, T(c)) == (0, "")
        _close(c / math.sqrt(k), (0.5 * bias.double() + 2 * reference) / math.sqrt(k), dtype)
        batched = torch.randn(3, m, k, device="cuda", dtype=dtype)
        other = torch.randn(3, k, n, device="cuda", dtype=dtype)
        result = _poisoned((3, m, n), dtype)
        assert library.bmm(T(batched), T(other), T(result)) == (0, "")
        _close(result / math.sqrt(k), (batched.double() @ other.double()) / math.sqrt(k), dtype)


@pytest.mark.parametrize(("stride", "padding"), [(1, 1), (2, 0), (1, 3)])
def test_conv2d_and_max_pool2d(ops, stride, padding):
    library, dtypes = ops
    for dtype in dtypes:
        x = torch.randn(2, 5, 17, 19, device="cuda", dtype=dtype)
        w = torch.randn(7, 5, 3, 3, device="cuda", dtype=dtype)
        want = F.conv2d(x.double(), w.double(), stride=stride, padding=padding)
        out = _poisoned(tuple(want.shape), dtype)
        geometry = (stride, stride, padding, padding, 1, 1)
        assert library.conv2d(T(x), T(w), *geometry, T(out)) == (0, "")
        _close(out / 6, want / 6, dtype)
        pooled = F.max_pool2d(x.double(), 3, 2, 1)
        out = _poisoned(tuple(pooled.shape), dtype)
        assert library.max_pool2d(T(x), 3, 3, 2, 2, 1, 1, T(out)) == (0, "")
        _close(out, pooled, dtype)
    out = _poisoned((2, 7, 5, 6), dtypes[-1])  # the shape a stride of 3 gives: refused for it
    status, message = library.conv2d(T(x), T(w), 3, 3, 0, 0, 1, 1, T(out))
    assert status == Status.NO_VARIANT and "no variant was built for stride_h_=3" in message
    assert bool(out.isnan().all()), "a refused call wrote its output"


@pytest.mark.parametrize("shape", [(4, 1000), (2, 3, 1), (5, 4096), (1, 17), (2, 0, 4)])
def test_rows(ops, shape):
    library, dtypes = ops
    for dtype in dtypes:
        x = torch.randn(shape, device="cuda", dtype=dtype)
        out = _poisoned(shape, dtype)
        assert library.softmax(T(x), -1, T(out)) == (0, "")
        _close(out, torch.softmax(x.double(), -1), dtype)
        assert library.softmax(T(x), 0, T(out)) == (0, "")
        _close(out, torch.softmax(x.double(), 0), dtype)
        weight = torch.randn(shape[-1], device="cuda", dtype=dtype)
        want = F.rms_norm(x.double(), shape[-1:], weight.double(), 1e-6)
        assert library.rms_norm(T(x), T(weight), 1e-6, T(out)) == (0, "")
        _close(out, want, dtype)
        assert library.rms_norm(T(x), ops_tensor(0, ()), 1e-6, T(out)) == (0, "")
        _close(out, F.rms_norm(x.double(), shape[-1:], None, 1e-6), dtype)
        residual, total = torch.randn_like(x), _poisoned(shape, dtype)
        assert library.fused_add_rms_norm(T(x), T(residual), T(weight), 1e-6, T(out), T(total)) == (
            0,
            "",
        )
        _close(total, (x + residual).double(), dtype)
        _close(out, F.rms_norm((x + residual).double(), shape[-1:], weight.double(), 1e-6), dtype)


def _rotated(x, sin, cos, interleaved):
    if interleaved:
        first, second = x[..., 0::2], x[..., 1::2]
    else:
        first, second = x.chunk(2, -1)
    sin, cos = sin[None, :, None, :], cos[None, :, None, :]
    a, b = first * cos - second * sin, first * sin + second * cos
    return torch.stack((a, b), -1).flatten(-2) if interleaved else torch.cat((a, b), -1)


@pytest.mark.parametrize("head", [64, 128, 40])  # 40: attention pads it, rotary refuses it
def test_attention_and_rotary_embedding(ops, head):
    library, dtypes = ops
    for dtype in dtypes:
        x = torch.randn(2, 33, 3, head, device="cuda", dtype=dtype)
        angles = torch.rand(33, head // 2, device="cuda", dtype=torch.float64) * 6
        sin, cos = angles.sin().to(dtype), angles.cos().to(dtype)
        out = _poisoned(x.shape, dtype)
        for interleaved in (0, 1):
            want = _rotated(x.double(), sin.double(), cos.double(), interleaved)
            status = library.rotary_position_embedding(T(x), T(sin), T(cos), interleaved, T(out))
            if head == 40:
                assert status[0] == Status.NO_VARIANT and "head dimensions of 64, 128" in status[1]
                continue
            assert status == (0, "")
            _close(out, want, dtype)
        for lq, lk, heads_kv, causal in ((100, 257, 4, 1), (5, 64, 2, 0), (64, 64, 4, 0)):
            q = torch.randn(2, 4, lq, head, device="cuda", dtype=dtype)
            k, v = (torch.randn(2, heads_kv, lk, head, device="cuda", dtype=dtype) for _ in "kv")
            o = _poisoned(q.shape, dtype)
            status = library.scaled_dot_product_attention(
                T(q), T(k), T(v), causal, 0.0, int(heads_kv != 4), T(o)
            )
            assert status == (0, "")
            want = F.scaled_dot_product_attention(
                q.double(), k.double(), v.double(), is_causal=bool(causal), enable_gqa=True
            )
            _close(o, want, dtype)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_a_cpp_program_on_the_gpu(ops, tmp_path):
    from nt_triton.aot import _cc

    library, _ = ops
    out = os.path.dirname(os.path.dirname(library.handle._name))
    build = tmp_path / "build"
    generator = [] if shutil.which("make") else ["-G", "Ninja"]  # the image may lack make
    subprocess.run(
        [
            "cmake",
            *generator,
            "-S",
            str(CONSUMER),
            "-B",
            str(build),
            f"-DCMAKE_PREFIX_PATH={out}",
            "-DOPS_GPU=ON",
            f"-DCUDA_INCLUDE={_cc.cuda_include()}",  # Triton's cuda.h: no CUDA toolkit
            f"-DCUDA_DRIVER={libcuda_directory() / 'libcuda.so.1'}",  # the driver's, not a stub
        ],
        check=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True)
    result = subprocess.run([str(build / "gpu")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


@pytest.mark.parametrize("products", ["ieee", "tf32"])
def test_float32_products_as_the_build_asks(tmp_path, products):
    """A float32 mm of the C library computes float32 products by default (as cuBLAS's
    default math), TF32 when built with ``--float32-products tf32``."""
    options = Options(max_row=64, configurations=1, float32_products=products)
    library = Ops(build_library(tmp_path / products, ["mm"], ["float32"], None, options))
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(300, 700, device="cuda", generator=generator)
    b = torch.randn(700, 200, device="cuda", generator=generator)
    c = _poisoned((300, 200), torch.float32)
    assert library.mm(T(a), T(b), T(c)) == (0, "")
    torch.cuda.synchronize()
    expected = a.double() @ b.double()
    error = float((c.double() - expected).norm() / expected.norm())
    if products == "ieee":
        assert error < 1e-5, error
    else:
        assert 1e-5 < error < 1e-2, error
