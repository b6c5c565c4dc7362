"""``make(..., caller="cuda")`` on a machine without a GPU: files, library, launches.

Kernels are compiled for sm_90 and linked here; their launch functions run
against the stand-in driver (``support/aot_fakecuda.c``), which records each
launch, and are compared call by call with the just-in-time host code
(:mod:`parity`): the same grid, arguments and refusals.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import aot_kernels as k
from support.aot import tensor
from support.aot_parity import make_aot

import ninetoothed
from ninetoothed._aot.kernel import load_library
from ninetoothed.aot import HEADER_PATH, Status
from ninetoothed.errors import CodegenError, LaunchError

pytestmark = pytest.mark.interpreter_only

ROOT = Path(__file__).resolve().parents[2]


def test_files_are_written_into_a_new_output_dir(built):
    library = built["add"].aot.library
    directory = library.library.parent
    assert directory.name == "yet"
    for name in ("add.h", "add.c", "add.so", "ninetoothed.h"):
        assert (directory / name).is_file(), name
    assert (directory / "ninetoothed.h").read_text() == HEADER_PATH.read_text()
    header = library.header.read_text()
    assert '#include "ninetoothed.h"' in header
    assert (
        "NineToothedResult launch_add(NineToothedStream stream, NineToothedTensor x, "
        "NineToothedTensor y, NineToothedTensor z);"
    ) in header
    handle = load_library(library.library)
    assert handle.launch_add and handle.ninetoothed_last_error


def test_a_c_program_compiles_and_links_against_the_library(built, tmp_path):
    """The header is valid C and C++ and the library links with nothing of CUDA."""
    library = built["add"].aot.library
    program = tmp_path / "main.c"
    program.write_text(
        '#include "add.h"\n#include <stdio.h>\n'
        "int main(void) {\n"
        "    uint64_t shape[] = {4096}; int64_t strides[] = {1};\n"
        "    NineToothedTensor x = {(void *)0x1000, shape, strides};\n"
        "    int status = launch_add(0, x, x, x);\n"
        '    printf("%d|%s\\n", status, ninetoothed_last_error());\n'
        "    return 0;\n}\n"
    )
    for compiler, source in (("cc", program), ("c++", program.with_suffix(".cpp"))):
        if source.suffix == ".cpp":
            source.write_text(program.read_text())
        binary = tmp_path / f"main_{compiler}"
        subprocess.run(
            [
                compiler,
                str(source),
                f"-I{library.library.parent}",
                str(library.library),
                f"-Wl,-rpath,{library.library.parent}",
                "-o",
                str(binary),
                "-Wall",
                "-Werror",
            ],
            check=True,
        )
        environment = dict(os.environ, NINETOOTHED_LIBCUDA="/nonexistent/libcuda.so.1")
        result = subprocess.run([str(binary)], capture_output=True, text=True, env=environment)
        status, message = result.stdout.strip().split("|", 1)
        assert int(status) == Status.DRIVER
        assert "cannot load the CUDA driver" in message and "NVIDIA driver" in message


@pytest.mark.parametrize(
    ("environment", "status", "words"),
    [
        ({"NINETOOTHED_LIBCUDA": "/nonexistent/libcuda.so.1"}, Status.DRIVER, "NVIDIA driver"),
        ({"FAKE": "fail_init"}, Status.DRIVER, "cuInit failed"),
        ({"FAKE": "no_context"}, Status.NO_CONTEXT, "no CUDA context is current"),
        ({"FAKE": "fail_load"}, Status.DEVICE, "built for sm_90"),
    ],
    ids=["no driver", "cuInit fails", "no context", "wrong architecture"],
)
def test_driver_failures_return_a_code_and_a_message(
    built, fake_cuda_path, environment, status, words
):
    """Each in a fresh process: a library loads its driver once per process."""
    library = built["add"].aot.library
    script = f"""
import ctypes, sys
sys.path[:0] = {[str(ROOT / "tests")]!r}
from support.aot import FakeCuda, tensor
fake = FakeCuda({str(fake_cuda_path)!r})
which = {environment.get("FAKE")!r}
if which == "fail_init": fake.set("fake_fail_init", 100)
if which == "no_context": fake.set("fake_no_context", 1)
if which == "fail_load": fake.set("fake_fail_load", 209)
library = ctypes.CDLL({str(library.library)!r})
library.ninetoothed_last_error.restype = ctypes.c_char_p
x = tensor(0x1000, (4096,))
status = library.launch_add(ctypes.c_void_p(0), x, x, x)
print(status, library.ninetoothed_last_error().decode())
"""
    variables = {key: value for key, value in environment.items() if key != "FAKE"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, **variables},
        check=True,
    )
    code, message = result.stdout.strip().split(" ", 1)
    assert int(code) == status, message
    # The library's messages begin as the Python callable's: with the kernel's label.
    assert words in message, message
    assert re.match(r"kernel 'add' \(aot_kernels\.py:\d+\): ", message), message


def test_add_launches_as_the_host_code_computes(built):
    harness = built["add"]
    chosen = {harness.check([(4096,)] * 3)}
    assert chosen == {0}  # contiguous, sizes multiples of the tile: the dense specialisation
    for size in (45327, 1, 255, 256, 257, 4000, 0):
        chosen.add(harness.check([(size,)] * 3))
    chosen.add(harness.check([(1000,)] * 3, [(2,), (1,), (3,)]))
    chosen.add(harness.check([(1000,)] * 3, pointers=[0x1004, 0x2000, 0x3000]))
    chosen.add(harness.check([(3,)] * 3, [(2**40,), (1,), (1,)]))  # 64-bit offsets
    chosen.add(harness.check([(2**31,)] * 3))  # more elements than 32-bit indices reach
    # 64-bit offsets, though every size and stride fits in 32 bits:
    assert harness.check([(2**30 + 16,)] * 3) == 3  # more elements than 2^30
    assert harness.check([(2**16,)] * 3, [(2**16,), (1,), (1,)]) == 3  # offsets past 2^31
    chosen.add(harness.check([(1000,)] * 3, [(-1,), (1,), (1,)]))
    assert chosen == {0, 1, 2, 3, None}, chosen  # every specialisation was reached
    harness.check([(5,), (6,), (5,)])  # refused: sizes the arrangement ties differ
    harness.check([(300,), (300,), (300,)], [(1,), (1,), (0,)])  # an overlapping output


def test_layout_flags_and_strides_as_the_host_code_computes(built):
    harness = built["flat"]
    assert harness.check([(16, 32, 16)] * 2) == 0
    assert harness.check([(4, 8, 16)] * 2) == 1  # sizes not all divisible by 16
    harness.check([(3, 5, 7)] * 2)
    harness.check([(4, 8, 16)] * 2, [(256, 16, 1), (128, 16, 1)])  # a slice: not one block
    harness.check([(4, 8, 16)] * 2, [(1, 4, 32), None])  # permuted
    harness.check([(2, 1, 3)] * 2, [(3, 2**40, 1), None])  # a huge stride of a size-1 dim


def test_mm_launches_as_the_host_code_computes(built):
    harness = built["mm"]
    assert harness.check([(128, 64), (64, 256), (128, 256)]) == 0
    harness.check([(100, 30), (30, 70), (100, 70)])
    harness.check([(128, 64), (64, 256), (128, 256)], [(1, 128), None, None])  # transposed
    harness.check([(1, 16), (16, 1), (1, 1)])
    harness.check([(128, 64), (64, 256), (127, 256)])  # refused: c's rows differ from a's


def test_scalars_reach_the_kernel_and_constexpr_ones_are_never_read(built):
    harness = built["scale"]
    assert harness.check([(1024,), (1024,)], scalars={"alpha": 2.5, "flag": 1}) is not None
    harness.check([(100,), (100,)], scalars={"alpha": -0.125, "flag": 1})
    header = harness.aot.library.header.read_text()
    assert "alpha: a scalar: data points to a double in host memory" in header
    assert "flag: fixed when the kernel was made: never read" in header


def test_null_pointers_are_refused_with_a_message(built):
    harness = built["scale"]
    from support.aot import scalar, tensor

    from ninetoothed.aot import NineToothedTensor

    x = tensor(0x1000, (64,))
    null = NineToothedTensor(0, None, None)
    checks = [
        (
            [null, scalar(1.0), null, x],
            "parameter 'x' has 1 dimension(s), but its shape or strides pointer is null",
        ),
        (
            [x, null, null, x],
            "scalar 'alpha': data must point to its value (a double in host memory)",
        ),
        (
            [tensor(0, (64,)), scalar(1.0), null, x],
            "parameter 'x' has elements, but its data pointer is null",
        ),
    ]
    for arguments, words in checks:
        assert harness.call_c(arguments) == Status.INVALID_ARGUMENT
        assert words in harness.last_error().decode()
    assert harness.call_c([tensor(0, (0,)), scalar(1.0), null, tensor(0, (0,))]) == 0  # empty


def test_the_python_callable_refuses_cpu_tensors(built):
    import torch

    x = torch.ones(8, dtype=torch.float16)
    with pytest.raises(
        LaunchError, match=r"kernel 'add' \(\w+\.py:\d+\): the tensors are on cpu, but kernels"
    ):
        built["add"].aot(x, x, x)
    x = x.float()
    with pytest.raises(LaunchError, match=r"parameter 'x' expects dtype float16, got float32"):
        built["add"].aot(x, x.half(), x.half())


def test_an_unchanged_make_reuses_the_library(built, tmp_path_factory):
    library = built["add"].aot.library
    before = library.library.stat().st_mtime_ns
    began = time.perf_counter()
    again = make_aot(
        k.add_arrangement, k.add_application, k.add_tensors(), library.library.parent, "add"
    )
    assert time.perf_counter() - began < 1.0
    assert again.library == library and library.library.stat().st_mtime_ns == before


@pytest.mark.parametrize(
    ("options", "error", "pattern"),
    [
        ({"kernel_name": "3add"}, ValueError, r"kernel_name='3add' is not a C identifier"),
        ({"kernel_name": "add-1"}, ValueError, r"kernel_name='add-1' is not a C identifier"),
        ({"kernel_name": "class"}, ValueError, r"kernel_name='class' is a C or C\+\+ keyword"),
        ({"target": "sm_x"}, ValueError, r"target='sm_x' names no GPU architecture"),
        ({"caller": "torch", "output_dir": "."}, TypeError, r"pass caller='cuda' too"),
        ({"output_dir": 3}, TypeError, r"output_dir must be a path"),
    ],
    ids=repr,
)
def test_bad_options_are_refused(options, error, pattern, tmp_path):
    arguments = {"caller": "cuda", "kernel_name": "ok", "output_dir": tmp_path, "target": "sm_90"}
    with pytest.raises(error, match=pattern):
        ninetoothed.make(
            k.add_arrangement, k.add_application, k.add_tensors(), **{**arguments, **options}
        )


def test_an_output_dir_that_cannot_be_written_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for directory, pattern in (
        (blocker, "exists and is not a directory"),
        (blocker / "sub", "cannot create output_dir"),
        (Path("/proc/ninetoothed"), "cannot create output_dir"),
    ):
        with pytest.raises(OSError, match=pattern):
            make_aot(k.add_arrangement, k.add_application, k.add_tensors(), directory, "add")


def test_a_target_triton_cannot_compile_for_is_named(tmp_path):
    with pytest.raises(CodegenError, match=r"could not compile it for sm_35:\n.*ptxas fatal"):
        ninetoothed.make(
            k.add_arrangement,
            k.add_application,
            k.add_tensors(),
            caller="cuda",
            kernel_name="add35",
            output_dir=tmp_path,
            target="sm_35",
        )


def test_no_c_compiler_names_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(CodegenError, match=r"no C compiler found .* install gcc"):
        make_aot(k.add_arrangement, k.add_application, k.add_tensors(), tmp_path, "add_no_cc")


def test_tensors_without_a_dtype_are_refused(tmp_path):
    tensors = tuple(ninetoothed.Tensor(1) for _ in range(3))
    with pytest.raises(CodegenError, match=r"parameter 'x' declares no dtype"):
        make_aot(k.add_arrangement, k.add_application, tensors, tmp_path, "undeclared")


def test_jagged_tensors_are_refused(tmp_path):
    def arrangement(x, y):
        return x.tile((1, 1, 16)), y.tile((1, 1, 16))

    tensors = tuple(
        ninetoothed.Tensor(3, dtype=ninetoothed.float32, jagged_dim=1) for _ in range(2)
    )
    with pytest.raises(CodegenError, match=r"parameter 'x' is jagged"):
        make_aot(arrangement, k.copy_application, tensors, tmp_path, "jagged")


def test_symbols_given_at_the_call_are_refused(tmp_path):
    block = ninetoothed.Symbol("BLOCK", constexpr=True)

    def arrangement(x, y, z):
        return x.tile((block,)), y.tile((block,)), z.tile((block,))

    with pytest.raises(CodegenError, match=r"constexpr\(s\) BLOCK are given at the call"):
        make_aot(arrangement, k.add_application, k.add_tensors(), tmp_path, "given")


def test_a_kernel_calling_a_triton_jit_helper_compiles_in_this_process(tmp_path, fake_cuda):
    """A worker process cannot import the helper: the kernel compiles here."""
    from support.aot import tensor

    tensors = (ninetoothed.Tensor(1, dtype=ninetoothed.float32),) * 2
    kernel = make_aot(k.flat_arrangement, k.twice_application, tensors, tmp_path, "twice")
    handle = load_library(kernel.library.library)
    x = tensor(0x1000, (256,))
    assert handle.launch_twice(ctypes.c_void_p(0), x, x) == 0
    assert fake_cuda.launch()["grid"] == (2, 1, 1)


def test_alignment_facts_reach_the_binary_as_the_just_in_time_kernel_has_them(built):
    """Strides and pointers aligned: the binary is told so whatever the batch size (a batch
    of 3 heads is not divisible by 16, as attention's batch of 4 was not); an odd stride or a
    pointer off 16 bytes launches a binary that assumes nothing of them."""
    harness = built["rows"]
    plans = [plan.describe() for plan in harness.plans]
    assert plans[:3] == [
        "32-bit, tiles, aligned, unit, divisible",
        "32-bit, tiles, aligned, unit",
        "32-bit, aligned, unit",
    ], plans
    assert harness.check([(2, 16, 64, 32)] * 2) == 0
    assert harness.check([(2, 3, 64, 32)] * 2) == 1  # the heads alone are not divisible
    assert harness.check([(2, 3, 60, 32)] * 2) == 2  # masked rows, aligned strides
    general = plans.index("32-bit")
    odd = [(3 * 64 * 33, 64 * 33, 33, 1), None]  # a slice of rows 33 elements wide
    assert harness.check([(2, 3, 64, 32)] * 2, odd) == general
    assert harness.check([(2, 3, 64, 32)] * 2, pointers=[(1 << 48) + 2, 2 << 48]) == general
    # The binaries differ in what they were told: the strides' divisibility by 16.
    strides = {f"{t}_stride_{d}" for t in "xy" for d in range(3)}
    told = []
    for plan in harness.plans[:3] + [harness.plans[general]]:
        names = [name for name, _ in plan.specialisation.signature]
        told.append(strides & {names[i] for i, flag in plan.specialisation.attrs if flag})
    assert told == [strides, strides, strides, set()]


def test_kernels_with_large_shared_memory_are_prepared_as_triton_prepares_them(
    built, fake_cuda, tmp_path
):
    """Over 48 KiB of shared memory: the oversized mode where the driver knows it, else
    the larger shared-memory carveout and the opt-in dynamic size (as Triton's loader does
    for the just-in-time kernel, so that both get the same programs per multiprocessor)."""
    from nt_triton.aot import _cc

    library = built["add"].aot.library
    directory = library.source.parent
    source = tmp_path / "large.c"  # the add library, its variants claiming 64 KiB each
    text = library.source.read_text()
    source.write_text(re.sub(r'(\{nt_binary_\d+, "\w+", )0u,', r"\g<1>65536u,", text))
    shared = tmp_path / "large.so"
    subprocess.run(
        [*_cc.compiler(), *_cc.FLAGS, "-shared", f"-I{directory}", f"-I{_cc.cuda_include()}"]
        + [str(source), "-o", str(shared), "-ldl", "-lpthread"],
        check=True,
    )
    launch = ctypes.CDLL(str(shared)).launch_add
    x = tensor(0x1000, (4096,))
    for oversized, context in ((0, 0x7100), (1, 0x7200)):  # a new context: loaded again
        fake_cuda.set("fake_oversized", oversized)
        fake_cuda.set("fake_cache_config", -1)
        attributes = (ctypes.c_int * 32).in_dll(fake_cuda.library, "fake_attributes")
        for index in (8, 17):
            attributes[index] = -1
        fake_cuda.set_context(context)
        try:
            assert launch(ctypes.c_void_p(0), x, x, x) == 0
        finally:
            fake_cuda.set_context(0x1000)
            fake_cuda.set("fake_oversized", 0)
        assert fake_cuda.launch()["shared"] == 65536
        if oversized:
            assert (attributes[17], attributes[8], fake_cuda.get("fake_cache_config")) == (
                3,
                -1,
                -1,
            )
        else:  # CU_FUNC_CACHE_PREFER_SHARED, the opt-in size less the static shared memory
            assert (attributes[17], attributes[8], fake_cuda.get("fake_cache_config")) == (
                -1,
                fake_cuda.get("fake_shared_optin"),
                1,
            )
