"""What a call of a small block costs compiled and eager: our ops against torch's (issue 14).

    python benchmarks/compiled.py                  # a CUDA machine
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
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

ROWS, COLUMNS = 64, 256


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
    options = parser.parse_args()
    if options.cpu_stub:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # kernels are made as on the CPU
        rows, profile = stub_rows(options.calls, options.profile)
        text = table(rows, "the CPU, launches stubbed (support.stub_gpu)") + "\n" + profile
    else:
        import torch

        text = table(gpu_rows(options.calls), torch.cuda.get_device_name())
    print(text)
    out = os.environ.get("OUT")
    if out:
        Path(out, "compiled.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
