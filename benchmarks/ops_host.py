"""Per-call host cost of the library's ops (``nt_torch.ops``) against torch's, in one run.

    python benchmarks/ops_host.py                  # a CUDA GPU: ratios against torch
    python benchmarks/ops_host.py --breakdown      # a CUDA GPU: where ops.add's time goes
    TRITON_INTERPRET=1 python benchmarks/ops_host.py --cpu-stub   # CPU, launches stubbed

Cases, float16: ``add`` of 4096 elements against ``torch.add``, and of 16 x 4096
(a plan that passes the 2-D tensors where the kernel takes 1-D views:
``ninetoothed.library.ops._stand_ins``); ``mm`` of a
decoding Linear (16 x 4096 by a transposed 4096 x 4096 weight) against
``torch.mm``; ``rms_norm`` of 16 x 4096 against ``F.rms_norm``; and
``scaled_dot_product_attention`` at decoding shapes (one query row of 32
heads over a cache of 8 heads x 4k and 32k keys, head dimension 128)
against torch's with ``enable_gqa``.  Each op is called with the same
arguments every time, so after its second call it runs its recorded plan
(``ninetoothed.library.ops._memo``), found by the guard of the most recent
hit: one tracing check, one C++ tensor check, the plan's allocations and
the kernels' pinned launches.  The run first waits for the express lane's
extension and the native allocation (``nt_torch._native``), which a process
builds in the background at its first op call; ``NINETOOTHED_NATIVE=off`` or
``NINETOOTHED_EXPRESS=off`` measures without them.

Method: a round calls one implementation ``--calls`` times back to back and
divides the host's time by the calls; the device is synchronised before and
after, off the clock.  Launches are asynchronous and a round queues fewer
kernels than the launch queue holds, so the time is the host's, not the
device's.  The implementations take turns for ``--rounds`` rounds; rows show
the median [min - max] us per call and ``torch / ours`` (above 1: our call
costs the host less).

``--cpu-stub`` runs the ops on CPU tensors through
:func:`support.stub_gpu.stubbed_gpu`: the adapter and the kernels' fast paths
as on a GPU, the launch a Python function that does nothing; only
``torch.add`` is timed beside them (torch's other CPU ops compute for real).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

Case = tuple[str, Callable[[], Any], Callable[[], Any] | None]
"""A title, our call and torch's (None: not timed)."""


def cases(device: str, stub: bool, small: bool = False) -> Iterator[Case]:
    """The calls to time, their inputs made on ``device``."""
    import torch
    import torch.nn.functional as F

    from nt_torch import ops

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float16, device=device)

    hidden, keys = (64, (128,)) if small else (4096, (4096, 32768))
    x, y = randn(hidden), randn(hidden)
    yield f"add ({hidden},)", lambda: ops.add(x, y), lambda: torch.add(x, y)
    a, w = randn(16, hidden), randn(hidden, hidden)
    b = randn(16, hidden)  # 2-D: the op views both as 1-D, its plan passes them as they are
    yield f"add (16, {hidden})", lambda: ops.add(a, b), lambda: torch.add(a, b)
    mm = None if stub else (lambda: torch.mm(a, w.t()))
    yield f"mm (16, {hidden}) @ weight.T", lambda: ops.mm(a, w.t()), mm
    weight = randn(hidden)
    norm = None if stub else (lambda: F.rms_norm(a, (hidden,), weight, 1e-6))
    yield f"rms_norm (16, {hidden})", lambda: ops.rms_norm(a, weight, 1e-6), norm
    for length in keys:
        q, k, v = randn(1, 32, 1, 128), randn(1, 8, length, 128), randn(1, 8, length, 128)

        def ours(q: Any = q, k: Any = k, v: Any = v) -> Any:
            return ops.scaled_dot_product_attention(q, k, v, enable_gqa=True)

        def theirs(q: Any = q, k: Any = k, v: Any = v) -> Any:
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

        yield f"sdpa decode 1 x 32/8 heads, {length} keys", ours, None if stub else theirs


def measure(calls: dict[str, Callable[[], Any]], rounds: int, count: int) -> dict[str, list[float]]:
    """Microseconds per call of each, per round (the calls take turns)."""
    import torch

    synchronize = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for call in calls.values():  # the first calls make, tune and record plans
        for _ in range(3):
            call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            synchronize()
            began = time.perf_counter()
            for _ in range(count):
                call()
            times[name].append((time.perf_counter() - began) / count * 1e6)
            synchronize()
    return times


def table(cases_found: list[Case], rounds: int, count: int) -> list[str]:
    """One markdown row per case: ours, torch's, torch / ours."""
    calls: dict[str, Callable[[], Any]] = {}
    for title, ours, theirs in cases_found:
        calls[f"ours: {title}"] = ours
        if theirs is not None:
            calls[f"torch: {title}"] = theirs
    times = measure(calls, rounds, count)
    lines = ["| case | ours us/call | torch us/call | torch / ours |", "|---|---:|---:|---:|"]
    for title, _, _ in cases_found:
        ours_us = times[f"ours: {title}"]
        torch_us = times.get(f"torch: {title}")
        ratio = "-" if torch_us is None else f"{_median(torch_us) / _median(ours_us):.3g}"
        lines.append(f"| {title} | {_spread(ours_us)} | {_spread(torch_us)} | {ratio} |")
    return lines


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _spread(values: list[float] | None) -> str:
    if values is None:
        return "-"
    return f"{_median(values):.2f} [{min(values):.2f} - {max(values):.2f}]"


def steady() -> str:
    """Wait for what a long-running process has built by the time it is measured (the
    express lane's extension, the native allocation); say which serve calls."""
    from nt_torch import _express, _native

    express = _express.extension()
    native = express is not None and _native.install(express)
    state = {True: "on", False: "off"}
    return f"express lane {state[express is not None]}, native allocation {state[native]}"


def main(argv: list[str]) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-stub", action="store_true", help="CPU, launches stubbed")
    parser.add_argument(
        "--breakdown", action="store_true", help="time ops.add's parts (ops_host_breakdown.py)"
    )
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=100, help="calls per round (100)")
    args = parser.parse_args(argv)
    import torch

    if args.cpu_stub:
        sys.path.insert(0, str(ROOT / "tests"))
        from support.stub_gpu import stubbed_gpu

        stub = stubbed_gpu(record=False)
        stub.__enter__()  # held while the cases run (a dropped generator would close it)
        where = "CPU, launches stubbed"
    elif not torch.cuda.is_available():
        print("no CUDA GPU: pass --cpu-stub (with TRITON_INTERPRET=1)", file=sys.stderr)
        return 2
    else:
        where = torch.cuda.get_device_name()
    device = "cpu" if args.cpu_stub else "cuda"
    serving = steady()
    if args.breakdown and not args.cpu_stub:
        from ops_host_breakdown import breakdown

        lines = breakdown(measure, args.rounds, args.calls)
    else:
        lines = table(list(cases(device, args.cpu_stub)), args.rounds, args.calls)
    if args.cpu_stub:
        stub.__exit__(None, None, None)
    print(f"host cost per call: {where}; torch {torch.__version__}; {args.rounds} rounds")
    print(serving)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
