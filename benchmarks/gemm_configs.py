"""Each tile configuration of the library's GEMM, pinned alone, against cuBLAS (GPU).

    python benchmarks/gemm_configs.py                      # the prefill-shaped products
    python benchmarks/gemm_configs.py --shapes 1024x4096x1024,512x4096x1024
    TRITON_INTERPRET=1 python benchmarks/gemm_configs.py --small   # the harness only

What decides a tuning space: for every ``(M, K, N)`` shape, the library's GEMM kernel
made with one configuration at a time (:data:`CONFIGS`), one program per tile and
persistent, each result checked against float64 first, then timed against
``torch.mm`` in interleaved rounds (``triton.testing.do_bench`` medians).  The
second operand is a transposed ``(N, K)`` weight, as a Linear layer passes it
(``--row-major`` gives a ``(K, N)`` one).  One line per shape: cuBLAS's time and
the six best configurations as cuBLAS time / ours.

On an H100 (2026-11-28, 3 rounds, by the probe this script was made from), the
generated space missed at mid-sized outputs: 1024 x 4096 x 1024 ran 0.724 of cuBLAS
unsplit, where 64 x 128 x 64 tiles with 8 stages reached 0.917; 512 x 4096 x 1024 0.742
against 0.853 for 64 x 64 x 64 with 6 stages.  What those runs found is now the
one-program-per-tile variant's pinned list, ``mm.CONFIGS`` (``docs/tuning.md`` has the
measurements); a run of this script on the H100 put 64 x 64 x 64 with 6 stages first
at 512 x 4096 x 1024 (0.816, one round).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch
from gemm_variants import made
from measure import device_or_refusal

from ninetoothed.library import mm

EXTRA_CONFIGS = (
    (128, 256, 64, 8, 3),
    (64, 256, 64, 8, 4),
    (128, 128, 32, 4, 6),
    (64, 128, 32, 4, 8),
)
"""Candidates timed beside the library's list: the persistent list's best at large outputs
and neighbours of the list's entries."""

CONFIGS = tuple(dict.fromkeys((*mm.CONFIGS, *EXTRA_CONFIGS)))
"""``(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` timed alone: the
one-program-per-tile variant's list (``mm.CONFIGS``) and :data:`EXTRA_CONFIGS`."""


SHAPES = ((1024, 4096, 1024), (512, 4096, 1024), (2048, 4096, 1024), (1024, 4096, 4096))
"""``(M, K, N)``: Llama 3 8B's prefill products of 1,024 tokens and their neighbours."""

SMALL = ((40, 48, 24),)
"""The ``--small`` shape (the interpreter): several programs of 16 x 16 tiles."""


def variants(shape: tuple[int, int, int], configs: tuple[tuple[int, ...], ...], transposed: bool,
             device: str) -> tuple[dict[Any, Callable[[], Any]], list[str]]:  # fmt: skip
    """``{"cublas" or (config, persistent): call}`` at ``shape``, each result checked first;
    and a line for each configuration that failed to make, compile or compute."""
    m, k, n = shape
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    weight = torch.randn(n, k, device=device, dtype=torch.float16) / k**0.5
    b = weight.t() if transposed else weight.t().contiguous()
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    expected = a.double() @ b.double()
    calls: dict[Any, Callable[[], Any]] = {"cublas": lambda: torch.mm(a, b, out=c)}
    failures = []
    for config in configs:
        for persistent in (False, True):
            options: dict[str, Any] = {"configs": mm.pinned_configs((config,))}
            if persistent:
                options["persistent"] = True
            call, failure = checked(lambda options=options: made(2, options), a, b, c, expected)
            if call is None:
                failures.append(f"  {config} persistent={persistent}: {failure}"[:200])
            else:
                calls[(config, persistent)] = call
    return calls, failures


def checked(
    make: Callable[[], Any], a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
    expected: torch.Tensor,
) -> tuple[Callable[[], Any] | None, str]:  # fmt: skip
    """``(call, "")``: ``make()``'s kernel writing ``a @ b`` into ``c``, checked against
    ``expected`` (``c`` poisoned first); or ``(None, why)`` where making, compiling or the
    result failed (reported, the others timed)."""
    try:
        kernel = make()
        c.fill_(float("nan"))
        kernel(a, b, c)
        error = (c.double() - expected).abs().max().item()
        if not error < 0.05:
            raise AssertionError(f"max error {error:.3g}")
    except Exception as failure:  # noqa: BLE001 - reported, the others timed
        return None, str(failure)
    return lambda: kernel(a, b, c), ""


def time_shape(
    calls: dict[Any, Callable[[], Any]], rounds: int, bench: Callable[..., float]
) -> str:
    """cuBLAS's time and the six best configurations' ratios (medians over ``rounds``)."""
    times: dict[Any, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(bench(call))
    cublas = statistics.median(times["cublas"])
    ranked = sorted(
        (statistics.median(values), name) for name, values in times.items() if name != "cublas"
    )
    best = "; ".join(
        f"{'persistent ' if name[1] else ''}{name[0]} {cublas / value:.3f}"
        for value, name in ranked[:6]
    )
    return f"torch.mm {cublas * 1e3:.1f} us; torch.mm time / ours, best first: {best}"


def main(argv: list[str]) -> int:
    """Time every shape; print a line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", help="comma-separated MxKxN (default: the prefill shapes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--row-major", action="store_true", help="a (K, N) second operand")
    parser.add_argument("--small", action="store_true", help="one tiny shape (the interpreter)")
    args = parser.parse_args(argv)
    device = device_or_refusal()
    if device is None:
        return 2
    if args.small:
        shapes, configs = SMALL, ((16, 16, 16, 4, 2),)
    elif args.shapes:
        shapes = tuple(tuple(int(x) for x in s.split("x")) for s in args.shapes.split(","))
        configs = CONFIGS
    else:
        shapes, configs = SHAPES, CONFIGS
    if device == "cuda":
        from triton.testing import do_bench

        def bench(call: Callable[[], Any]) -> float:
            return float(do_bench(call, warmup=10, rep=50, return_mode="median"))
    else:
        import time

        def bench(call: Callable[[], Any]) -> float:
            began = time.perf_counter()
            call()
            return (time.perf_counter() - began) * 1e3

    for shape in shapes:
        calls, failures = variants(shape, configs, not args.row_major, device)
        print("x".join(map(str, shape)), time_shape(calls, args.rounds, bench), flush=True)
        for line in failures:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
