"""Ahead-of-time libraries against the floors: host cost per call, device-time parity, builds.

    python benchmarks/aot.py [--out DIR] [--skip-library | --library-only]   # on a GPU

Measures, on one GPU, in one run (numbers with ratios, as Markdown, and JSON
in ``--out``: ``aot.json``, or ``aot-bench.json`` and ``aot-library.json`` for the
two halves):

* **C host cost**: ``benchmarks/aot_host.c``, compiled here against an
  ``add`` library, times ``launch_add`` from C (microseconds of host time per
  call: the full call, the checks alone, the driver's context queries alone,
  and ``cuLaunchKernel`` alone of the binary the call launches, the floor of
  any launcher).  Floor: at most 4 us per call.
* **Python host cost**: the library's Python callable against ``torch.add``
  (``out=``), per call, on the same 4096-element tensors.  Floor: no more
  than ``torch.add``.
* **Device time**: add (2^24 float16), mm (4096^3 float16) and attention
  (4 x 16 x 2048 x 64 float16), each made just in time and ahead of time with
  the same configuration, timed with CUDA events in interleaved rounds, with
  the library's specialisation compiled exactly as the just-in-time kernel (or
  the divisibility facts only the latter has).  Floor: within 2 %.
* **Builds**: a tuned mm build (24 configurations, three dtypes) from
  nothing, and the unchanged rebuild (floor: at most 1 s).
* **The kernel library as a C library**: every forward op for float16, built
  for this GPU from nothing (floor: at most 10 minutes) and rebuilt unchanged
  (floor: at most 1 s), into ``--library DIR`` (new or empty; default a
  temporary directory), which ``NINETOOTHED_OPS_DIR=DIR`` then lends to the
  GPU tests of ``tests/aot/test_library_gpu.py``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from report import markdown  # noqa: E402
from support import aot_gpu as g  # noqa: E402
from support.aot import binaries  # noqa: E402

import ninetoothed  # noqa: E402
from ninetoothed.arrangement.symbol import evaluate  # noqa: E402
from nt_triton.aot import _cc  # noqa: E402
from nt_triton.description import describe, size_name, stride_name  # noqa: E402


def c_host(directory: Path, add) -> dict[str, float]:
    """Microseconds of host time per ``launch_add`` from C: the full call, the checks
    alone, the driver's context queries alone, and ``cuLaunchKernel`` alone of the binary
    the call launches (:func:`dense_variant`)."""
    program = directory / "aot_host"
    command = [
        *_cc.compiler(),
        "-O2",
        f"-I{directory}",
        f"-I{_cc.cuda_include()}",
        str(HERE / "aot_host.c"),
        str(directory / "add.so"),
        f"-L{g.libcuda_directory()}",
        "-l:libcuda.so.1",
        f"-Wl,-rpath,{directory}",
        "-o",
        str(program),
    ]
    subprocess.run(command, check=True)
    variant = dense_variant(add, directory / "add_dense.cubin", 4096)
    output = subprocess.check_output([str(program), *variant], text=True)
    full, checks, queries, raw = map(float, output.split())
    return {
        "c_call_us": full,
        "c_checks_us": checks,
        "c_context_queries_us": queries,
        "c_raw_launch_us": raw,
    }


def dense_variant(add, cubin: Path, elements: int) -> list[str]:
    """``aot_host``'s arguments for launching the first specialisation of the ``add``
    library itself, as the library does for ``elements`` contiguous elements: writes its
    cubin to ``cubin``; its entry name, threads, shared bytes, programs and parameter
    layout (read from the generated source)."""
    text = add.library.source.read_text()
    row = re.search(r'\{nt_binary_0, "(\w+)", (\d+)u, (\d+)u,', text)
    case = re.search(r"case 0: \{(.*?)void \*nt_parameters", text, re.S)
    assert row and case, "the generated source's layout changed"
    cubin.write_bytes(binaries(add.library.source)[0])
    layout = ""
    for ctype, value in re.findall(r"(\w+) nt_argument_\d+ = (.*?);", case.group(1)):
        pointer = ".data" in value
        layout += "p" if pointer else "z" if value.strip() == "0" else "i" if "32" in ctype else "l"
    description = describe(add.spec)
    values: dict[str, int] = dict(description.meta)
    for parameter in add.spec.tensor_parameters:
        values[size_name(parameter.name, 0)] = elements
        values[stride_name(parameter.name, 0)] = 1
    programs = math.prod(int(evaluate(size, values)) for size in description.grid)
    return [str(cubin), row.group(1), row.group(3), row.group(2), str(programs), layout]


def _per_call(calls, count: int = 2000, rounds: int = 7) -> list[float]:
    """Median microseconds of host time per call of each of ``calls``, in interleaved
    rounds (the queue drained between rounds)."""
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):
        for index, call in enumerate(calls):
            torch.cuda.synchronize()
            began = time.perf_counter()
            for _ in range(count):
                call()
            times[index].append((time.perf_counter() - began) / count * 1e6)
    torch.cuda.synchronize()
    return [statistics.median(measured[1:]) for measured in times]


def python_host(add) -> dict[str, float]:
    """Microseconds per call: the library's Python callable, ``torch.add`` and the same
    kernel made just in time."""
    x, y, z = (torch.randn(4096, device="cuda") for _ in range(3))
    jit = ninetoothed.make(g.add_arrangement, g.add_application, g.add_tensors(ninetoothed.float32))
    aot, reference, just_in_time = _per_call(
        [lambda: add(x, y, z), lambda: torch.add(x, y, out=z), lambda: jit(x, y, z)]
    )
    return {
        "python_aot_us": aot,
        "torch_add_us": reference,
        "python_ratio": aot / reference,
        "python_jit_us": just_in_time,
    }


def _device_ms(calls, repeat: int = 50, rounds: int = 7) -> list[float]:
    """Median milliseconds of device time per call of each of ``calls`` (CUDA events),
    measured in interleaved rounds (the order alternating), so that clocks drifting
    over the run weigh on each alike."""
    for call in calls:
        for _ in range(5):
            call()
    times: list[list[float]] = [[] for _ in calls]
    for round_ in range(rounds):
        order = range(len(calls)) if round_ % 2 == 0 else reversed(range(len(calls)))
        for index in order:
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeat):
                calls[index]()
            stop.record()
            stop.synchronize()
            times[index].append(start.elapsed_time(stop) / repeat)
    return [statistics.median(measured) for measured in times]


def compiled_alike(jit, aot, arguments) -> str:
    """Which of the library's specialisations is compiled exactly as the just-in-time
    kernel is for ``arguments`` (the same Triton input, hence the same binary), or
    ``"none"``: a ratio off 1 with a match is the launch's or the clock's, not the code's."""
    from nt_torch.adapter import TorchAdapter
    from nt_triton._launch import compiled
    from nt_triton.aot import _variants
    from nt_triton.description import ParameterKind

    adapter = TorchAdapter()
    tensors = [a for a in arguments if isinstance(a, torch.Tensor)]
    infos = [adapter.describe(t) for t in tensors]
    pointers = [t.data_ptr() for t in tensors]
    names = [p.name for p in jit.spec.parameters if p.is_scalar]
    scalars = dict(zip(names, [a for a in arguments if not isinstance(a, torch.Tensor)]))
    description = describe(aot.spec)
    prepared = jit.generated.prepare(infos, pointers, scalars)
    signature = jit.generated.signature
    values = list(prepared.arguments) + [description.meta[p.name] for p in signature.meta]
    pointer_types = {
        i: (
            compiled.triton_type(infos[p.tensor_index or 0].dtype),
            pointers[p.tensor_index or 0] % 16 == 0,
        )
        for i, p in enumerate(signature)
        if p.kind is ParameterKind.POINTER
    }
    wanted = compiled.specialise([(p.name, p.constexpr) for p in signature], values, pointer_types)
    return _closest(wanted, _variants.plans(description))


def _closest(wanted, plans) -> str:
    """The plan compiled as ``wanted``, else the first compiled with its types and
    constants that assumes no more than it (the one the launcher takes), and the
    parameters the just-in-time kernel knows divisible by 16 and it does not."""
    same = [p for p in plans if p.specialisation == wanted]
    if same:
        return same[0].describe()
    names = [name for name, _ in wanted.signature]
    known = {i for i, flag in wanted.attrs if flag}
    for plan in plans:
        compiled = plan.specialisation
        assumed = {i for i, flag in compiled.attrs if flag}
        if (
            compiled.signature == wanted.signature
            and compiled.constexprs == wanted.constexprs
            and assumed <= known
        ):
            missing = ", ".join(names[i] for i in sorted(known - assumed))
            return f"{plan.describe()}, but for the divisibility of {missing}"
    return "none"


def _both(directory: Path, name: str, arrangement, application, tensors, **options):
    jit = ninetoothed.make(arrangement, application, tensors(), **options)
    aot = ninetoothed.make(
        arrangement,
        application,
        tensors(),
        caller="cuda",
        kernel_name=name,
        output_dir=directory,
        **options,
    )
    return jit, aot


def device_parity(directory: Path) -> list[dict[str, float | str]]:
    """JIT and AOT device times of three kernels with the same configuration."""
    half = ninetoothed.float16
    cases = []
    add = _both(
        directory,
        "add_parity",
        functools.partial(g.add_arrangement, block_size=1024),
        g.add_application,
        lambda: g.add_tensors(half),
        num_warps=4,
    )
    n = 1 << 24
    x, y, z = (torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(3))
    cases.append(("add 2^24", add, (x, y, z)))
    arrangement, application, tensors = g.mm_premake(half, 128, 128, 32)
    mm = _both(
        directory,
        "mm_parity",
        arrangement,
        application,
        lambda: g.mm_premake(half)[2],
        num_warps=8,
        num_stages=3,
    )
    a, b, c = (torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(3))
    cases.append(("mm 4096^3", mm, (a, b, c)))
    attention = _both(
        directory,
        "attention_parity",
        g.attention_arrangement,
        g.attention_application,
        lambda: g.attention_tensors(half),
        num_warps=4,
    )
    q, k, v, o = (
        torch.randn(4, 16, 2048, 64, device="cuda", dtype=torch.float16) for _ in range(4)
    )
    cases.append(("attention 4x16x2048x64", attention, (q, k, v, 0.125, o)))
    rows: list[dict[str, float | str]] = []
    for label, kernels, arguments in cases:
        jit_ms, aot_ms = _device_ms([functools.partial(k, *arguments) for k in kernels])
        try:
            alike = compiled_alike(*kernels, arguments)
        except Exception as error:  # noqa: BLE001 - a diagnosis only: the timing stands
            alike = f"not compared ({type(error).__name__}: {error})"
        rows.append(
            {
                "kernel": label,
                "jit_ms": jit_ms,
                "aot_ms": aot_ms,
                "ratio": aot_ms / jit_ms,
                "compiled_alike": alike,
            }
        )
    return rows


def builds(directory: Path) -> dict[str, float]:
    """Seconds of a tuned mm build from nothing, and of the unchanged rebuild."""
    meta = ("block_size_m", "block_size_n", "block_size_k")
    times = []
    for _ in range(2):
        began = time.perf_counter()
        ninetoothed.build(
            g.mm_premake,
            g.mm_configs(),
            meta_parameters=meta,
            kernel_name="mm_build",
            output_dir=directory / "build",
        )
        times.append(time.perf_counter() - began)
    return {"mm_build_s": times[0], "mm_rebuild_s": times[1]}


def library_builds(out: Path) -> dict[str, float]:
    """Seconds of the whole forward library's build (float16, this GPU) from nothing, and
    of the unchanged rebuild."""
    from ninetoothed.library.build import build_library

    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"--library {out}: give a new or empty directory (timed from nothing)")
    times = []
    for _ in range(2):
        began = time.perf_counter()
        build_library(out, None, ["float16"], None)
        times.append(time.perf_counter() - began)
    return {"library_build_s": times[0], "library_rebuild_s": times[1]}


def measure(arguments: argparse.Namespace) -> dict[str, Any]:
    """Every measurement the arguments ask for, by name."""
    results: dict[str, Any] = {"device": torch.cuda.get_device_name()}
    directory = Path(tempfile.mkdtemp(prefix="ninetoothed-aot-bench-"))
    if not arguments.library_only:
        add = ninetoothed.make(
            g.add_arrangement,
            g.add_application,
            g.add_tensors(ninetoothed.float32),
            caller="cuda",
            kernel_name="add",
            output_dir=directory,
        )
        results.update(c_host(directory, add))
        results.update(python_host(add))
        results["parity"] = device_parity(directory)
        results.update(builds(directory))
    if not arguments.skip_library:
        results.update(library_builds(arguments.library or directory / "ops"))
    return results


def report(results: dict[str, Any]) -> None:
    """``results`` as Markdown tables, each measure beside its floor."""
    print(f"# Ahead-of-time libraries on {results['device']}\n")
    rows = []
    if "c_call_us" in results:
        rows += [
            ["C call (launch_add, 4096 floats)", f"{results['c_call_us']:.2f} us", "<= 4 us"],
            ["C checks alone (empty grid)", f"{results['c_checks_us']:.2f} us", ""],
            [
                "driver context queries alone",
                f"{results['c_context_queries_us']:.2f} us",
                "cuCtxGetCurrent + cuCtxGetId",
            ],
            [
                "cuLaunchKernel alone (same binary)",
                f"{results['c_raw_launch_us']:.2f} us",
                "the floor of any launcher",
            ],
            [
                "Python callable",
                f"{results['python_aot_us']:.2f} us",
                f"torch.add: {results['torch_add_us']:.2f} us "
                f"(ratio {results['python_ratio']:.2f})",
            ],
            ["the same kernel just in time", f"{results['python_jit_us']:.2f} us", ""],
            ["mm build (24 configurations)", f"{results['mm_build_s']:.1f} s", ""],
            ["unchanged rebuild", f"{results['mm_rebuild_s']:.3f} s", "<= 1 s"],
        ]
    if "library_build_s" in results:
        rows += [
            ["forward library build (float16)", f"{results['library_build_s']:.1f} s", "<= 600 s"],
            ["unchanged library rebuild", f"{results['library_rebuild_s']:.3f} s", "<= 1 s"],
        ]
    print(markdown(["what", "measured", "floor / baseline"], rows))
    if "parity" in results:
        print()
        parity = [
            [
                str(r["kernel"]),
                f"{r['jit_ms']:.4f}",
                f"{r['aot_ms']:.4f}",
                f"{r['ratio']:.3f}",
                str(r["compiled_alike"]),
            ]
            for r in results["parity"]
        ]
        headers = ["kernel", "JIT (ms)", "AOT (ms)", "AOT/JIT (floor <= 1.02)", "JIT's binary"]
        print(markdown(headers, parity))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--library", type=Path, default=None, help="where the library goes")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--skip-library", action="store_true", help="skip the library build")
    choice.add_argument(
        "--library-only", action="store_true", help="only the library build and rebuild"
    )
    arguments = parser.parse_args()
    results = measure(arguments)
    report(results)
    if arguments.out is not None:
        arguments.out.mkdir(parents=True, exist_ok=True)
        # The two halves a GPU session runs apart keep both their files.
        name = (
            "aot-library"
            if arguments.library_only
            else "aot-bench"
            if arguments.skip_library
            else "aot"
        )
        (arguments.out / f"{name}.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
