"""The kernel library as a C library, built for sm_90 on a machine without a GPU.

A small build (add, rms_norm, softmax; float16; rank 2, rows up to 4) links
here; its C API is called through ctypes against the stand-in driver, which
records which variant's code each call launches: the argument checks and the
kernel choice of ``ninetoothed.library.ops``, in C.  A C++ program finds the
library with CMake's ``find_package`` and calls it.  The slow test builds one op
of each other kind; the whole library builds on the GPU (``test_library_gpu.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.aot import binaries
from support.aot_library import CONSUMER, Ops, ops_tensor

from ninetoothed.aot import DATA_TYPES, Status
from ninetoothed.library.build import LIBRARY, Options, build_library
from ninetoothed.library.build.command import main

pytestmark = pytest.mark.interpreter_only

FAR = 1 << 40
OPTIONS = Options(max_ndim=2, max_row=4, head_dims=(64,), configurations=2)


@pytest.fixture(scope="module")
def built(tmp_path_factory, fake_cuda):
    out = tmp_path_factory.mktemp("library") / "ops"
    library = build_library(out, ["add", "rms_norm", "softmax"], ["float16"], "sm_90", OPTIONS)
    return out, library, Ops(library)


def _images(out: Path, kernel: str, unit: str) -> list[bytes]:
    """The code of one variant (its units: one per configuration tuned)."""
    directory = out / "src" / kernel
    units = [*directory.glob(f"{unit}.c"), *directory.glob(f"{unit}_*.c")]
    assert units, f"no unit {unit} in {directory}"
    return [image for path in units for image in binaries(path)]


def _launched(fake_cuda) -> bytes:
    return fake_cuda.image(fake_cuda.launch()["module"])


def test_the_library_its_header_and_package_are_written(built):
    out, library, _ = built
    assert library == out / "lib" / LIBRARY
    header = (out / "include" / "ninetoothed_ops.h").read_text()
    assert "NineToothedResult ninetoothed_ops_add(NineToothedStream stream, " in header
    assert "#define NINETOOTHED_OPS_HAS_SOFTMAX 1" in header and "ninetoothed_ops_mm" not in header
    assert "one of: float16.  Built for sm_90." in header
    assert (out / "include" / "ninetoothed.h").is_file()
    config = out / "lib" / "cmake" / "NineToothedOps" / "NineToothedOpsConfig.cmake"
    assert "NineToothedOps::ninetoothed_ops" in config.read_text()
    symbols = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True).stdout
    for op in ("add", "rms_norm", "softmax"):
        assert f" T ninetoothed_ops_{op}\n" in symbols
    assert " ninetoothed_last_error\n" in symbols


def test_add_views_its_tensors_as_its_kernels_take_them(built, fake_cuda):
    out, _, ops = built
    one_d, two_d = _images(out, "add", "nt_ops_add_1_8"), _images(out, "add", "nt_ops_add_2_8")
    # One contiguous shape, of any rank: the 1-D kernel over all elements.
    tensors = [ops_tensor((i + 1) * FAR, (2, 3, 5)) for i in range(3)]
    assert ops.add(*tensors) == (0, "")
    assert _launched(fake_cuda) in one_d
    # Broadcast (a column and a row), and strided: the 2-D kernel.
    column, row = ops_tensor(FAR, (3, 1)), ops_tensor(2 * FAR, (4,))
    assert ops.add(column, row, ops_tensor(3 * FAR, (3, 4))) == (0, "")
    assert _launched(fake_cuda) in two_d
    strided = ops_tensor(FAR, (3, 4), (1, 3))
    assert ops.add(strided, strided, ops_tensor(3 * FAR, (3, 4))) == (0, "")
    assert _launched(fake_cuda) in two_d


@pytest.mark.parametrize(
    ("shapes", "strides", "dtypes", "status", "message"),
    [
        (
            [(3,), (4,), (4,)],
            [None] * 3,
            ["float16"] * 3,
            Status.SHAPE,
            "add: shapes (3,) and (4,) do not broadcast",
        ),
        (
            [(3, 1), (4,), (3, 5)],
            [None] * 3,
            ["float16"] * 3,
            Status.SHAPE,
            "add: output must have shape (3, 4), got (3, 5)",
        ),
        (
            [(4,), (4,), (4,)],
            [None] * 3,
            ["float16", "float32", "float16"],
            Status.NO_VARIANT,
            "add: the tensors must share one dtype of float16 (those built); got input float16, "
            "other float32, output float16",
        ),
        (
            [(2, 3, 4), (4,), (2, 3, 4)],
            [None] * 3,
            ["float16"] * 3,
            Status.UNSUPPORTED,
            "add: the output has 3 dimensions; the library was built for strided or broadcast "
            "tensors of at most 2 (contiguous tensors of one shape take any rank)",
        ),
        (
            [(4, 4), (4, 4), (4, 4)],
            [None, None, (0, 1)],
            ["float16"] * 3,
            Status.SHAPE,
            "nt_ops_add (ndim=2, dtype=float16",
        ),
    ],
    ids=["no broadcast", "output shape", "dtypes", "rank", "overlapping output"],
)
def test_add_refuses_what_the_op_refuses(built, shapes, strides, dtypes, status, message):
    _, _, ops = built
    tensors = [
        ops_tensor((i + 1) * FAR, shape, stride, dtype)
        for i, (shape, stride, dtype) in enumerate(zip(shapes, strides, dtypes))
    ]
    got, text = ops.add(*tensors)
    assert got == status and text.startswith(message), text
    if status == Status.SHAPE and "stride 0" in text:  # the kernel's launcher's own words
        assert "the output 'output' (shape (4, 4), strides (0, 1)) has stride 0" in text


def test_rms_norm_merges_rows_and_picks_the_row_s_power_of_two(built, fake_cuda):
    out, _, ops = built
    weighted = {row: _images(out, "rms_norm", f"nt_ops_rms_norm_{row}_8") for row in (1, 2, 4)}
    plain = _images(out, "rms_norm_unweighted", "nt_ops_rms_norm_unweighted_4_8")
    for shape, row in (((2, 5, 3), 4), ((7, 2), 2), ((1,), 1)):
        x, y = ops_tensor(FAR, shape), ops_tensor(2 * FAR, shape)
        weight = ops_tensor(3 * FAR, shape[-1:])
        assert ops.rms_norm(x, weight, 1e-6, y) == (0, "")
        assert _launched(fake_cuda) in weighted[row]
    none = ops_tensor(0, ())
    assert ops.rms_norm(ops_tensor(FAR, (6, 3)), none, 1e-6, ops_tensor(2 * FAR, (6, 3))) == (0, "")
    assert _launched(fake_cuda) in plain
    checks = [
        ((6, 5), (5,), None, Status.UNSUPPORTED, "rms_norm: rows of 5 elements are longer than 4"),
        ((6, 3), (4,), None, Status.SHAPE, "rms_norm: weight must have shape (3,), got (4,)"),
        ((2, 3, 3), (3,), (3, 6, 1), Status.UNSUPPORTED, "rms_norm: the dimensions of input"),
    ]
    for shape, weight_shape, strides, status, message in checks:
        x = ops_tensor(FAR, shape, strides)
        got = ops.rms_norm(x, ops_tensor(3 * FAR, weight_shape), 1e-6, ops_tensor(4 * FAR, shape))
        assert got[0] == status and got[1].startswith(message), got


def test_softmax_along_any_dimension(built, fake_cuda):
    out, _, ops = built
    x, y = ops_tensor(FAR, (4, 3)), ops_tensor(2 * FAR, (4, 3))
    assert ops.softmax(x, 0, y) == (0, "")  # rows of 4, a stride of 3 apart
    assert _launched(fake_cuda) in _images(out, "softmax", "nt_ops_softmax_4_8")
    assert ops.softmax(x, -1, y) == (0, "")
    assert _launched(fake_cuda) in _images(out, "softmax", "nt_ops_softmax_4_8")
    assert ops.softmax(x, 2, y) == (
        Status.INVALID_ARGUMENT,
        "softmax: dim 2 is out of range for 2 dimensions",
    )


def test_empty_tensors_are_served_and_launch_nothing_without_rows(built, fake_cuda):
    """An empty tensor's strides address nothing: any rank is one block, any view rows."""
    _, _, ops = built
    before = fake_cuda.get("fake_launches")
    for shape, strides in (((0,), None), ((2, 0, 3), None), ((0, 5, 4), (0, 9, 2))):
        tensors = [ops_tensor((i + 1) * FAR, shape, strides) for i in range(3)]
        assert ops.add(*tensors) == (0, ""), shape
    null = [ops_tensor(0, (2, 0, 3)) for _ in range(3)]  # torch's empty tensors: null data
    assert ops.add(*null) == (0, "") and ops.softmax(null[0], 1, null[1]) == (0, "")
    for shape, strides in (((2, 0, 4), None), ((0, 3), None), ((3, 0, 2), (1, 7, 5))):
        x, y = ops_tensor(FAR, shape, strides), ops_tensor(2 * FAR, shape)
        assert ops.softmax(x, -1, y) == (0, "") and ops.softmax(x, 0, y) == (0, ""), shape
        assert ops.rms_norm(x, ops_tensor(3 * FAR, shape[-1:]), 1e-6, y) == (0, ""), shape
    assert fake_cuda.get("fake_launches") == before


def test_an_unchanged_build_is_skipped_and_a_changed_one_rebuilds(built):
    out, library, _ = built
    before = library.stat().st_mtime_ns
    began = time.perf_counter()
    build_library(out, ["add", "rms_norm", "softmax"], ["float16"], "sm_90", OPTIONS)
    assert time.perf_counter() - began <= 1.0 and library.stat().st_mtime_ns == before


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_a_cpp_program_finds_the_library_with_cmake(built, tmp_path, fake_cuda_path):
    out, _, _ = built
    build = tmp_path / "build"
    subprocess.run(
        ["cmake", "-S", str(CONSUMER), "-B", str(build), f"-DCMAKE_PREFIX_PATH={out}"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    environment = dict(os.environ, NINETOOTHED_LIBCUDA=str(fake_cuda_path))
    result = subprocess.run(
        [str(build / "checks")], capture_output=True, text=True, env=environment, check=True
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "0|"
    assert lines[1] == f"{int(Status.SHAPE)}|add: output must have shape (3, 4), got (3, 5)"
    assert lines[2].startswith(f"{int(Status.NO_VARIANT)}|add: the tensors must share one dtype")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--ops", "add,nope"], "the kernel library has no op 'nope'"),
        (["--dtypes", "int8"], "the ops take float16, bfloat16, float32, not 'int8'"),
        (["--max-row", "100"], "max_row must be a power of two, got 100"),
        (["--head-dims", "96"], "head dimensions are powers of two from 16 to 256, got 96"),
        (["--target", "sm_x"], "target='sm_x' names no GPU architecture"),
    ],
)
def test_the_command_names_what_is_wrong(arguments, message, tmp_path, capsys):
    assert main([*arguments, "--out", str(tmp_path / "out")]) == 1
    assert message in capsys.readouterr().err


def test_ninetoothed_build_library_is_the_same_command():
    result = subprocess.run(
        [sys.executable, "-m", "ninetoothed", "build-library", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--dtypes" in result.stdout and "--max-row" in result.stdout


KINDS = ["mm", "scaled_dot_product_attention", "max_pool2d", "rotary_position_embedding"]
"""The kinds of kernel ``built`` lacks, one op each: a GEMM (tile shapes, persistent
programs), attention (head sizes, causal, grouped and few queries), a window geometry
per variant, sizes compiled in exactly.  addmm and bmm are built by the GEMM maker
and conv2d by the geometry one; they, and every op at the command's default options,
are built on the GPU (``test_library_gpu.py``), where every C build costs a fraction
of what it costs here; the GEMM-shaped and attention kernels' compiles for sm_90 are
also checked on their own (``tests/test_compile_hopper.py``)."""


@pytest.mark.slow
def test_each_kind_of_op_builds_links_and_dispatches(tmp_path, fake_cuda):
    """For sm_90 (on the CPU: each kernel's first configuration), heads of 64 only."""
    options = Options(max_ndim=2, max_row=4, head_dims=(64,))
    library = build_library(tmp_path / "kinds", KINDS, ["float16"], "sm_90", options)
    header = (tmp_path / "kinds" / "include" / "ninetoothed_ops.h").read_text()
    for op in KINDS:
        assert f"#define NINETOOTHED_OPS_HAS_{op.upper()} 1" in header
    ops = Ops(library)
    a, b, c = (ops_tensor((i + 1) * FAR, (64, 64)) for i in range(3))
    assert ops.mm(a, b, c) == (0, "")
    q = ops_tensor(FAR, (1, 2, 100, 64))
    k, v, o = (ops_tensor((i + 2) * FAR, (1, 2, 100, 64)) for i in range(3))
    assert ops.scaled_dot_product_attention(q, k, v, 1, 0.0, 0, o) == (0, "")
    assert ops.scaled_dot_product_attention(
        q, k, v, 0, 0.0, 0, ops_tensor(5 * FAR, (1, 2, 100, 32))
    )[0] == int(Status.SHAPE)
    check_the_gpu_test_s_calls(ops, fake_cuda)


def check_the_gpu_test_s_calls(ops: Ops, fake_cuda) -> None:
    """The calls ``test_library_gpu.py`` makes of mm, max_pool2d, rotary embedding and
    attention: each launches, or is refused as that test expects (a GPU session is not
    the place to find a call the C API turns down)."""

    def t(index: int, shape: tuple[int, ...], strides: tuple[int, ...] | None = None):
        return ops_tensor((index + 1) * FAR, shape, strides)

    for m, n, k in ((1, 64, 32), (3, 40, 70), (33, 70, 100), (512, 256, 128), (2048, 2048, 64)):
        a, b, c = t(0, (m, k)), t(1, (k, n), (1, k)), t(2, (m, n))
        launched(fake_cuda, ops.mm, a, b, c)
    x = t(0, (2, 5, 17, 19))
    launched(fake_cuda, ops.max_pool2d, x, 3, 3, 2, 2, 1, 1, t(2, (2, 5, 9, 10)))
    status, message = ops.max_pool2d(x, 2, 2, 1, 1, 0, 0, t(2, (2, 5, 16, 18)))
    assert status == Status.NO_VARIANT and "no variant was built for" in message, message
    for head in (64, 40):
        x, angles = t(0, (2, 33, 3, head)), t(1, (33, head // 2))
        out = t(2, (2, 33, 3, head))
        for interleaved in (0, 1):
            if head == 40:
                status, message = ops.rotary_position_embedding(x, angles, angles, interleaved, out)
                assert status == Status.NO_VARIANT and "a head dimension of 40" in message
            else:
                launched(
                    fake_cuda, ops.rotary_position_embedding, x, angles, angles, interleaved, out
                )
        for lq, lk, heads_kv, causal in ((100, 257, 4, 1), (5, 64, 2, 0), (64, 64, 4, 0)):
            q, o = t(0, (2, 4, lq, head)), t(3, (2, 4, lq, head))
            k, v = t(1, (2, heads_kv, lk, head)), t(2, (2, heads_kv, lk, head))
            gqa = int(heads_kv != 4)
            launched(fake_cuda, ops.scaled_dot_product_attention, q, k, v, causal, 0.0, gqa, o)


def launched(fake_cuda, op: Callable[..., tuple[int, str]], *arguments: Any) -> None:
    """``op(*arguments)`` succeeds and launches."""
    before = fake_cuda.get("fake_launches")
    status = op(*arguments)
    assert status == (0, ""), status
    assert fake_cuda.get("fake_launches") > before, f"{op.__name__} launched nothing"


@pytest.mark.parametrize(
    ("products", "expected"), [("ieee", "ieee"), ("tf32x3", "tf32x3"), ("tf32", None)]
)
def test_float32_variants_compute_products_as_asked(products, expected):
    """A C consumer's float32 products are float32 by default (as cuBLAS's default math),
    TF32 when the build asks; other dtypes' kernels are left as they are."""
    from ninetoothed.library.build.catalogue import kernels
    from ninetoothed.library.build.variants import build_variants

    options = Options(max_ndim=2, max_row=4, head_dims=(64,), float32_products=products)
    mm = next(kernel for kernel in kernels(["mm"], options) if kernel.name == "mm")
    _, variants = build_variants(mm, ["float16", "float32"], options)
    float32 = DATA_TYPES.index("float32")
    asked = {v.key[-1] == float32: v.spec.options.get("input_precision") for v in variants}
    assert asked == {False: None, True: expected}
