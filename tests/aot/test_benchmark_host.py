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


def _benchmark():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import aot
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return aot


def test_the_host_benchmark_runs_and_launches_what_the_library_launches(
    tmp_path, fake_cuda, fake_cuda_path
):
    bench = _benchmark()
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


def test_the_parity_table_names_the_specialisation_compiled_as_the_jit_kernel():
    """Contiguous aligned tensors: the first specialisation is the JIT kernel's very
    Triton input; 3 heads: the second; rows of 33 elements: none (the JIT kernel keeps
    the innermost stride's 1 and the pointers' alignment, the general specialisation
    assumes nothing)."""
    import types

    import torch

    import ninetoothed

    bench = _benchmark()
    jit = ninetoothed.make(k.rows_arrangement, k.copy_application, k.rows_tensors())
    library = types.SimpleNamespace(spec=jit.spec)  # what compiled_alike reads of one

    def alike(shape, width=None):
        tensors = [torch.empty(*shape[:-1], width or shape[-1], dtype=torch.float16)]
        tensors.append(torch.empty(*shape, dtype=torch.float16))
        return bench.compiled_alike(jit, library, [tensors[0][..., : shape[-1]], tensors[1]])

    assert alike((2, 16, 64, 32)) == "32-bit, tiles, aligned, unit, divisible"
    assert alike((2, 3, 64, 32)) == "32-bit, tiles, aligned, unit"
    assert alike((2, 3, 64, 32), width=33) == "none"
    # The benchmark's attention: a batch of 4 and 16 heads, which only the JIT kernel
    # knows divisible (used in no memory access).
    from support import aot_gpu as g

    half = ninetoothed.float16
    attention = ninetoothed.make(
        g.attention_arrangement, g.attention_application, g.attention_tensors(half)
    )
    q, k_, v, o = (torch.empty(4, 16, 128, 64, dtype=torch.float16) for _ in range(4))
    assert bench.compiled_alike(attention, attention, [q, k_, v, 0.125, o]) == (
        "32-bit, tiles, aligned, unit, but for the divisibility of q_size_1, k_size_1"
    )
