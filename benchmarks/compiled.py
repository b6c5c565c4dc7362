"""What a call of a small block costs compiled and eager: our ops against torch's.

    python benchmarks/compiled.py                  # a CUDA machine (all sections below)
    python benchmarks/compiled.py --rounds 20 --no-layer   # floors and fusion only
    python benchmarks/compiled.py --cpu-stub       # no GPU: our host cost, launches stubbed
    python benchmarks/compiled.py --cpu-stub --profile 25   # and where the time goes

The block (``support.blocks``) is ``rms_norm -> mm -> silu -> add`` on a (64, 256) float16 input
(weights (256,) and (256, 256)): ``nt_torch.ops`` eagerly, the same function
under ``torch.compile(fullgraph=True)`` (default mode, and
``mode="reduce-overhead"``, CUDA graphs), and torch's own functions eagerly
and compiled, the baseline.  Each row is the median of
``triton.testing.do_bench`` (ms -> µs per call; a block this small is bound by
the host, so this is mostly host time) and the host's own µs per call (a loop
of calls, synchronised once).  Results are checked against torch's first.

On the GPU three more sections follow.  *Floors*: the block's median time
over interleaved rounds (each round times every variant once, in rotating
order; ``--rounds``) for our ops eager, compiled (Inductor launching our
kernels), compiled through the generic operator (the default; this benchmark sets
``NINETOOTHED_COMPILED_LAUNCH=inductor`` for the other compiled variants of
ours), with ``mode="reduce-overhead"``, and torch's
compiled and reduce-overhead; then the ratios the project's floors bound.
*Fusion*: what Inductor does around our ``mm`` (an element-wise prologue, an
epilogue): the kernels its generated code launches and the times, against
torch's ``mm`` (:mod:`compiled_fusion`).  *Decoder layer*: one Llama 3 8B
decoder layer compiled with our ops against torch's, tokens per second
(:mod:`compiled_layer`; ``--no-layer`` skips it).

``--cpu-stub`` runs on CPU tensors through :mod:`support.stub_gpu` (the GPU's
fast path, launches recorded instead of run): host µs per call of the eager
and the compiled block, next to an empty compiled function (what
``torch.compile``'s own call costs).  ``--profile N`` adds cProfile's top
``N`` functions of 1,000 compiled calls.  ``OUT=/dir`` also writes
``/dir/compiled.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

ROWS, COLUMNS = 64, 256


KNOB = "NINETOOTHED_COMPILED_LAUNCH"
"""Which path compiled calls of ours take (``nt_torch.inductor``)."""


def torch_block(x: Any, weight: Any, b: Any) -> Any:
    """The same block in torch's functions."""
    import torch

    h = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, 1e-6)
    return torch.nn.functional.silu(h @ b) + x


def empty(x: Any, weight: Any, b: Any) -> Any:
    """Nothing but an output: what a compiled function costs by itself."""
    import torch

    return torch.empty_like(x)


def inputs(device: str) -> tuple[Any, ...]:
    import torch

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, COLUMNS, generator=generator).half().to(device)
    weight = torch.randn(COLUMNS, generator=generator).half().to(device)
    b = (torch.randn(COLUMNS, COLUMNS, generator=generator) / COLUMNS**0.5).half().to(device)
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


def compiled(function: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    import torch

    return torch.compile(function, fullgraph=True, **options)


def gpu_rows(calls: int) -> list[tuple[str, float, float]]:
    """(name, do_bench median µs, host µs) per variant, on the GPU."""
    import torch
    import triton
    from support.blocks import block

    args = inputs("cuda")
    variants = {
        "ours, eager": block,
        "ours, compiled": compiled(block),
        "ours, compiled reduce-overhead": compiled(block, mode="reduce-overhead"),
        "torch, eager": torch_block,
        "torch, compiled": compiled(torch_block),
        "torch, compiled reduce-overhead": compiled(torch_block, mode="reduce-overhead"),
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


def generic(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` compiled with every kernel call on the generic operator (the knob is
    read while tracing, so the first calls happen with it set)."""
    import torch

    def through_the_operator(*args: Any) -> Any:  # its own code object: its own cache
        return function(*args)

    compiled_function = torch.compile(through_the_operator, fullgraph=True)

    def call(*args: Any) -> Any:
        return compiled_function(*args)

    # Nothing of this compile may be cached: AOTAutograd's cache keys on Dynamo's graph,
    # which is the same for both paths, and would hand one path's result to the other.
    previous = os.environ.get(KNOB)
    os.environ[KNOB] = "operator"
    try:
        with torch._functorch.config.patch(enable_autograd_cache=False):
            for _ in range(3):
                call(*inputs("cuda"))
    finally:
        os.environ[KNOB] = previous or "operator"
    return call


def floor_medians(rounds: int) -> dict[str, float]:
    """Median µs per variant over interleaved rounds (see the module docstring)."""
    import statistics

    import torch
    from measure import Clock, interleaved_rounds
    from support.blocks import block

    args = inputs("cuda")
    variants = {
        "ours, eager": block,
        "ours, compiled": compiled(block),
        "ours, compiled (generic operator)": generic(block),
        "ours, reduce-overhead": compiled(block, mode="reduce-overhead"),
        "torch, compiled": compiled(torch_block),
        "torch, reduce-overhead": compiled(torch_block, mode="reduce-overhead"),
    }
    expected = torch_block(*args).float()
    for function in variants.values():
        for _ in range(3):  # compile, tune, record the CUDA graph
            result = function(*args)
        torch.testing.assert_close(result.float(), expected, rtol=2e-2, atol=2e-2)
    runs = {name: (lambda f=function: f(*args)) for name, function in variants.items()}
    times, failures = interleaved_rounds(runs, Clock("cuda"), rounds)
    if failures:
        raise RuntimeError(f"timing failed: {failures}")
    return {name: statistics.median(values) * 1e3 for name, values in times.items()}


def floor_table(medians: dict[str, float], rounds: int) -> str:
    lines = [
        f"Floors: medians of {rounds} interleaved rounds (do_bench medians, µs)",
        "",
        "| variant | µs |",
        "|---|---:|",
        *(f"| {name} | {value:.1f} |" for name, value in medians.items()),
        "",
        "| ratio | measured | floor | met |",
        "|---|---:|---:|---|",
    ]
    for what, numerator, denominator, floor in FLOORS:
        ratio = medians[numerator] / medians[denominator]
        met = "yes" if ratio <= floor else "NO"
        lines.append(f"| {what} | {ratio:.3f} | {floor:.2f} | {met} |")
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
            "ours, compiled (stubbed launch)": compiled(block),
            "torch.compile of an empty function": compiled(empty),
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
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (floors)")
    parser.add_argument("--no-layer", action="store_true", help="skip the decoder layer")
    options = parser.parse_args()
    if options.cpu_stub:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # kernels are made as on the CPU
        rows, profile = stub_rows(options.calls, options.profile)
        text = table(rows, "the CPU, launches stubbed (support.stub_gpu)") + "\n" + profile
    else:
        # Every compiled variant of ours but the generic operator's: Inductor launches.
        os.environ[KNOB] = "inductor"
        import compiled_fusion
        import compiled_layer
        import torch

        sections = [
            table(gpu_rows(options.calls), torch.cuda.get_device_name()),
            floor_table(floor_medians(options.rounds), options.rounds),
            compiled_fusion.report(options.rounds),
        ]
        if not options.no_layer:
            sections.append(compiled_layer.report(options.rounds))
        text = "\n\n".join(sections)
    print(text)
    out = os.environ.get("OUT")
    if out:
        Path(out, "compiled.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
