"""What a call of a small block costs compiled and eager: our ops against torch's.

    python benchmarks/compiled.py                  # a CUDA machine: floors, fusion, layer
    python benchmarks/compiled.py --no-layer --no-fusion   # the floors only
    python benchmarks/compiled.py --table          # and the per-variant host table
    python benchmarks/compiled.py --cpu-stub       # no GPU: our host cost, launches stubbed
    python benchmarks/compiled.py --cpu-stub --profile 25   # and where the time goes

The block (``support.blocks``) is ``rms_norm -> mm -> silu -> add`` on a (64, 256) float16 input
(weights (256,) and (256, 256)), and the floors also at (8192, 2048) (:data:`SIZES`):
``nt_torch.ops`` eagerly, the same function
under ``torch.compile(fullgraph=True)`` (default mode, and
``mode="reduce-overhead"``, CUDA graphs), and torch's own functions eagerly
and compiled, the baseline.  Results are checked against torch's first.

Each compiled variant is compiled from a copy of its function with a code
object of its own (``measure.own_code``): Dynamo caches compiled entries per
code object, so two variants of one function (two modes, two settings)
would each check the other's guards first on every call.

On the GPU: *Floors*: the block's median time over interleaved rounds (each
round times every variant once, in rotating order; ``--rounds``), by two
clocks: *loop*, CUDA events around 200 back-to-back calls divided by 200
(``measure.LoopClock``), and ``triton.testing.do_bench``'s median.  The
floors use the loop: at this size the block is host-bound (Dynamo's guards,
AOTAutograd's and Inductor's wrappers, the CUDA graph's replay), and a loop
of calls costs what a model's loop pays, host time where it outlasts the
kernels.  ``do_bench`` flushes the L2 before each call: host time shorter
than the flush hides behind it and longer host time shows, so it reports a
mix that favours whichever variant's host time fits under the flush.  Both
are reported.  The variants: our ops eager, compiled as by default
(Inductor launching our ``mm`` and fusing the element-wise and row-wise
ops, ``nt_torch.fusion``), compiled without that fusion
(``NINETOOTHED_COMPILED_FUSION=off``), compiled through the generic
operator (``NINETOOTHED_COMPILED_LAUNCH=operator``), with
``mode="reduce-overhead"``, and torch's eager, compiled and reduce-overhead;
then the ratios the project's floors bound.  *Fusion* (``--no-fusion`` skips
it): what Inductor does around our ``mm`` (an element-wise prologue, an
epilogue): the kernels its generated code launches and the times, against
torch's ``mm`` (:mod:`compiled_fusion`).  *Decoder layer* (``--no-layer``
skips it): one Llama 3 8B decoder layer compiled with our ops against
torch's, tokens per second (:mod:`compiled_layer`).  ``--table`` adds, first,
each variant's ``triton.testing.do_bench`` median and the host's own µs per
call (a loop of calls, synchronised once).  The run's seconds are printed last.

``--cpu-stub`` runs on CPU tensors through :mod:`support.stub_gpu` (the GPU's
fast path, launches recorded instead of run): host µs per call of the eager
and the compiled block, next to an empty compiled function (what
``torch.compile``'s own call costs).  ``--profile N`` adds cProfile's top
``N`` functions of 1,000 compiled calls.  ``OUT=/dir`` also writes
``/dir/compiled.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

ROWS, COLUMNS = 64, 256


KNOB = "NINETOOTHED_COMPILED_LAUNCH"
"""Which path compiled calls of ours take (``nt_torch.inductor``)."""
FUSION = "NINETOOTHED_COMPILED_FUSION"
"""Whether Inductor computes our element-wise and row-wise ops itself (``nt_torch.fusion``)."""


def empty(x: Any, weight: Any, b: Any) -> Any:
    """Nothing but an output: what a compiled function costs by itself."""
    import torch

    return torch.empty_like(x)


def inputs(device: str, rows: int = ROWS, columns: int = COLUMNS) -> tuple[Any, ...]:
    """The block's input ``(rows, columns)``, its norm's weight and its ``(columns, columns)``
    matrix, float16 on ``device``."""
    import torch

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, columns, generator=generator).half().to(device)
    weight = torch.randn(columns, generator=generator).half().to(device)
    b = (torch.randn(columns, columns, generator=generator) / columns**0.5).half().to(device)
    return x, weight, b


def host_us(function: Callable[[], Any], calls: int, sync: Callable[[], None]) -> float:
    """Host µs per call: the best of 5 loops of ``calls`` calls, synchronised once each."""
    best = float("inf")
    for _ in range(5):
        sync()
        began = time.perf_counter()
        for _ in range(calls):
            function()
        sync()
        best = min(best, (time.perf_counter() - began) / calls * 1e6)
    return best


def compiled(function: Callable[..., Any], label: str, **options: Any) -> Callable[..., Any]:
    """``function`` compiled, through a copy with its own code object (``label`` names
    it): Dynamo caches per code object, and variants sharing one would each check
    the other's guards first on every call."""
    import torch
    from measure import own_code

    return torch.compile(own_code(function, label), fullgraph=True, **options)


def gpu_rows(calls: int) -> list[tuple[str, float, float]]:
    """(name, do_bench median µs, host µs) per variant, on the GPU."""
    import torch
    import triton
    from support.blocks import block, torch_block

    args = inputs("cuda")
    variants = {
        "ours, eager": block,
        "ours, compiled": compiled(block, "default"),
        "ours, compiled reduce-overhead": compiled(
            block, "reduce_overhead", mode="reduce-overhead"
        ),
        "torch, eager": torch_block,
        "torch, compiled": compiled(torch_block, "default"),
        "torch, compiled reduce-overhead": compiled(
            torch_block, "reduce_overhead", mode="reduce-overhead"
        ),
    }
    expected = torch_block(*args).float()
    rows = []
    for name, function in variants.items():
        for _ in range(3):  # compile, tune, record the CUDA graph
            result = function(*args)
        torch.cuda.synchronize()
        torch.testing.assert_close(result.float(), expected, rtol=2e-2, atol=2e-2)
        median = triton.testing.do_bench(lambda f=function: f(*args), return_mode="median")
        rows.append(
            (
                name,
                median * 1e3,
                host_us(lambda f=function: f(*args), calls, torch.cuda.synchronize),
            )
        )
    return rows


FLOORS = (
    ("compiled ours / eager ours", "ours, compiled", "ours, eager", 1.00),
    ("compiled ours / compiled torch", "ours, compiled", "torch, compiled", 1.10),
    (
        "reduce-overhead ours / reduce-overhead torch",
        "ours, reduce-overhead",
        "torch, reduce-overhead",
        1.10,
    ),
)
"""(what, numerator, denominator, floor): the ratios of medians the project bounds."""


def with_setting(
    function: Callable[..., Any], name: str, value: str, args: tuple[Any, ...]
) -> Callable[..., Any]:
    """``function`` compiled with the environment variable ``name`` set to ``value`` while
    it is traced on ``args`` (the setting is read then, so the first calls happen with
    it set), through a copy with its own code object (its own cache)."""
    import torch

    size = "x".join(map(str, args[0].shape))
    compiled_function = compiled(function, f"{name}_{value}_{size}")
    # Nothing of this compile may be cached: AOTAutograd's cache keys on Dynamo's graph,
    # which is the same whatever the setting, and would hand one setting's code to another.
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        with torch._functorch.config.patch(enable_autograd_cache=False):
            for _ in range(3):
                compiled_function(*args)
    finally:
        if previous is None:
            del os.environ[name]
        else:
            os.environ[name] = previous
    return compiled_function


LOOP_CALLS = 200
"""Back-to-back calls per timed loop (:class:`measure.LoopClock`)."""


SIZES = ((ROWS, COLUMNS), (8192, 2048))
"""The block's ``(rows, columns)`` the floors are measured at: the small block, where a
call is host-bound (Dynamo's guards and the wrappers' fixed cost against four eager
launches), and one whose kernels take the GPU about 0.2 ms, where what compiling
changes on the GPU (fusion, Inductor's launch of our ``mm``) decides."""


def floor_medians(
    rounds: int, rows: int = ROWS, columns: int = COLUMNS
) -> dict[str, dict[str, float]]:
    """Median µs per variant over interleaved rounds (see the module docstring), by
    each clock: ``"loop"`` (the floors') and ``"do_bench"``; the block at ``(rows,
    columns)``.  The timed rounds run on one CPU (the first this process may use): a
    host-bound call's time moves with the core the scheduler puts it on, the same for
    every variant."""
    import statistics

    import torch
    from measure import Clock, LoopClock, interleaved_rounds
    from support.blocks import block, torch_block

    args = inputs("cuda", rows, columns)
    size = f"{rows}x{columns}"
    variants = {
        "ours, eager": block,
        "ours, compiled": compiled(block, f"default_{size}"),
        "ours, compiled (no fusion)": with_setting(block, FUSION, "off", args),
        "ours, compiled (generic operator)": with_setting(block, KNOB, "operator", args),
        "ours, reduce-overhead": compiled(block, f"reduce_overhead_{size}", mode="reduce-overhead"),
        "torch, eager": torch_block,
        "torch, compiled": compiled(torch_block, f"default_{size}"),
        "torch, reduce-overhead": compiled(
            torch_block, f"reduce_overhead_{size}", mode="reduce-overhead"
        ),
    }
    expected = torch_block(*args).float()
    for function in variants.values():
        for _ in range(3):  # compile, tune, record the CUDA graph
            result = function(*args)
        torch.testing.assert_close(result.float(), expected, rtol=2e-2, atol=2e-2)
    runs = {name: (lambda f=function: f(*args)) for name, function in variants.items()}
    medians = {}
    with _one_cpu():
        for clock_name, clock in (
            ("loop", LoopClock("cuda", calls=LOOP_CALLS)),
            ("do_bench", Clock("cuda")),
        ):
            times, failures = interleaved_rounds(runs, clock, rounds)
            if failures:
                raise RuntimeError(f"timing failed ({clock_name}): {failures}")
            medians[clock_name] = {
                name: statistics.median(values) * 1e3 for name, values in times.items()
            }
    return medians


@contextlib.contextmanager
def _one_cpu() -> Iterator[None]:
    """This process on one of the CPUs it may use, within the block (where the platform
    lets a process choose: Linux)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is None:
        yield
        return
    allowed = affinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def floor_table(
    medians: dict[str, dict[str, float]], rounds: int, size: tuple[int, int] = (ROWS, COLUMNS)
) -> str:
    """The variants' medians by both clocks, and the floors' ratios (the loop's), for the
    block of ``size``."""
    loop, bench = medians["loop"], medians["do_bench"]
    lines = [
        f"Floors, the block at ({size[0]}, {size[1]}) float16: medians of {rounds} "
        "interleaved rounds, µs per call. *loop*: CUDA events "
        f"around {LOOP_CALLS} back-to-back calls, divided by {LOOP_CALLS} (the floors use "
        "it); *do_bench*: triton.testing.do_bench's median (L2 flushed before each call)",
        "",
        "| variant | loop, µs | do_bench, µs |",
        "|---|---:|---:|",
        *(f"| {name} | {loop[name]:.1f} | {bench[name]:.1f} |" for name in loop),
        "",
        "| ratio | loop | do_bench | floor | met (loop) |",
        "|---|---:|---:|---:|---|",
    ]
    for what, numerator, denominator, floor in FLOORS:
        ratio = loop[numerator] / loop[denominator]
        met = "yes" if ratio <= floor else "NO"
        other = bench[numerator] / bench[denominator]
        lines.append(f"| {what} | {ratio:.3f} | {other:.3f} | {floor:.2f} | {met} |")
    return "\n".join(lines)


def stub_rows(calls: int, profile: int) -> tuple[list[tuple[str, float, float]], str]:
    """(name, nan, host µs) per variant on the stand-in GPU, and a profile's text."""
    from support.blocks import block
    from support.stub_gpu import stubbed_gpu

    args = inputs("cpu")
    rows = []
    text = ""
    with stubbed_gpu(record=False):
        variants = {
            "ours, eager (stubbed launch)": block,
            "ours, compiled (stubbed launch)": compiled(block, "stubbed"),
            "torch.compile of an empty function": compiled(empty, "stubbed"),
        }
        for name, function in variants.items():
            for _ in range(3):
                function(*args)
            rows.append((name, float("nan"), host_us(lambda f=function: f(*args), calls, _nothing)))
        if profile:
            function = variants["ours, compiled (stubbed launch)"]
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(1000):
                function(*args)
            profiler.disable()
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(profile)
            text = stream.getvalue()
    return rows, text


def _nothing() -> None:
    return None


def table(rows: list[tuple[str, float, float]], device: str) -> str:
    lines = [
        f"Block rms_norm -> mm -> silu -> add, ({ROWS}, {COLUMNS}) float16, on {device}",
        "",
        "| variant | do_bench median, µs | host, µs per call |",
        "|---|---:|---:|",
    ]
    for name, median, host in rows:
        shown = "" if median != median else f"{median:.1f}"
        lines.append(f"| {name} | {shown} | {host:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpu-stub", action="store_true", help="no GPU: launches stubbed")
    parser.add_argument("--calls", type=int, default=500, help="calls per host-time loop")
    parser.add_argument("--profile", type=int, default=0, help="cProfile's top N (--cpu-stub)")
    parser.add_argument(
        "--rounds", type=int, default=15, help="interleaved rounds (half for fusion, layer)"
    )
    parser.add_argument("--table", action="store_true", help="the per-variant host table")
    parser.add_argument("--no-fusion", action="store_true", help="skip the fusion section")
    parser.add_argument("--no-layer", action="store_true", help="skip the decoder layer")
    options = parser.parse_args()
    began = time.perf_counter()
    if options.cpu_stub:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # kernels are made as on the CPU
        rows, profile = stub_rows(options.calls, options.profile)
        text = table(rows, "the CPU, launches stubbed (support.stub_gpu)") + "\n" + profile
    else:
        import compiled_fusion
        import compiled_layer
        import torch

        for name in (KNOB, FUSION):  # the defaults; variants that differ set their own
            os.environ.pop(name, None)
        sections = []
        if options.table:
            sections.append(table(gpu_rows(options.calls), torch.cuda.get_device_name()))
        for size in SIZES:
            medians = floor_medians(options.rounds, *size)
            sections.append(floor_table(medians, options.rounds, size))
        # The fusion and layer sections' variants take longer each: fewer rounds.
        rounds = max(5, options.rounds // 2)
        if not options.no_fusion:
            sections.append(compiled_fusion.report(rounds))
        if not options.no_layer:
            sections.append(compiled_layer.report(rounds))
        sections.append(f"{torch.cuda.get_device_name()}: {time.perf_counter() - began:.0f} s")
        text = "\n\n".join(sections)
    print(text)
    out = os.environ.get("OUT")
    if out:
        Path(out, "compiled.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
