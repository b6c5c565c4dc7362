"""``benchmarks/aot_host.c`` and its arguments, off the GPU: the floors' C measurements
must run when a GPU session gets to them.

The program is compiled against an ``add`` library and the stand-in libcuda, and run
with the arguments ``benchmarks/aot.py`` reads from the library (the first
specialisation's cubin, entry, threads, programs and parameter layout); the stand-in
records its last launch, the raw one, which must pass what the library's launch passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import aot_kernels as k
from support.aot_parity import make_aot

from nt_triton.aot import _cc

pytestmark = pytest.mark.interpreter_only

ROOT = Path(__file__).resolve().parents[2]


def test_the_host_benchmark_runs_and_launches_what_the_library_launches(
    tmp_path, fake_cuda, fake_cuda_path
):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import aot as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    add = make_aot(k.add_arrangement, k.add_application, k.add_tensors(), tmp_path, "add")
    arguments = bench.dense_variant(add, tmp_path / "dense.cubin", 4096)
    cubin, name, threads, shared, programs, layout = arguments
    assert layout.startswith("pppiii") and set(layout[6:]) <= {"z"}, layout
    assert programs == "16" and int(threads) % 32 == 0 and shared.isdigit()
    assert Path(cubin).read_bytes()[:4] == b"\x7fELF" and name.isidentifier()
    program = tmp_path / "aot_host"
    subprocess.run(
        [
            *_cc.compiler(),
            "-O1",
            f"-I{tmp_path}",
            f"-I{_cc.cuda_include()}",
            str(ROOT / "benchmarks" / "aot_host.c"),
            str(tmp_path / "add.so"),
            f"-L{fake_cuda_path.parent}",
            "-l:libcuda.so.1",
            f"-Wl,-rpath,{tmp_path}:{fake_cuda_path.parent}",
            "-o",
            str(program),
        ],
        check=True,
    )
    output = subprocess.run(
        [str(program), *arguments], capture_output=True, text=True, check=True
    ).stdout
    assert len([float(value) for value in output.split()]) == 4, output
