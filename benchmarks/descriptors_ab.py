"""Tensor descriptors in the library's persistent products, off and on (GPU).

    python benchmarks/descriptors_ab.py [--pairs 2] [--rounds 5]

A call's plan keeps the host's descriptor flags, so the two settings of
``NINETOOTHED_TENSOR_DESCRIPTORS`` run in separate processes, alternating (off,
on, off, on, ...): each child times ``nt_torch.ops`` ``mm``, ``addmm`` (a bias
row) and ``bmm`` at the paper's shapes and at 4096 x 4096 x 14336 beside
cuBLAS, ``do_bench`` medians of interleaved rounds.  The parent prints every
child's lines.  On an H200 (2026-11-28, two pairs; ours in us, off -> on): mm
4096^3 203.3, 204.3 -> 202.7, 201.6; mm 4096 x 4096 x 14336 753.3, 761.0 ->
751.1, 748.2; addmm 4096^3 212.8, 211.7 -> 212.0, 211.7; addmm with 14336
columns 779.5, 787.4 -> 778.7, 779.3; bmm 4 x 2048^3 112.2, 114.0 -> 113.5,
113.5 (``docs/design.md``, "Tensor descriptors in generated persistent
programs").  This script's first run, in a later session (H200, two pairs): mm
4096^3 211.0, 211.5 -> 206.5, 206.4; with 14336 columns 764.2, 775.1 -> 741.8,
753.6; addmm 216.3, 218.5 -> 211.7, 213.1 and 795.6, 790.6 -> 787.0, 781.7; bmm
114.0, 113.8 -> 114.8, 115.4.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

SETTING = "NINETOOTHED_TENSOR_DESCRIPTORS"


def cases() -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """``(name, ours, cuBLAS)`` for each product timed."""
    import torch

    from nt_torch import ops

    made = []
    for m, k, n in [(4096, 4096, 4096), (4096, 4096, 14336)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        bias = torch.randn(n, device="cuda", dtype=torch.float16)
        made.append((f"mm {m}x{k}x{n}", lambda a=a, b=b: ops.mm(a, b), lambda a=a, b=b: a @ b))
        made.append(
            (
                f"addmm {m}x{k}x{n}",
                lambda a=a, b=b, c=bias: ops.addmm(c, a, b),
                lambda a=a, b=b, c=bias: torch.addmm(c, a, b),
            )
        )
    x = torch.randn(4, 2048, 2048, device="cuda", dtype=torch.float16)
    made.append(("bmm 4x2048^3", lambda: ops.bmm(x, x), lambda: torch.bmm(x, x)))
    return made


def child(rounds: int) -> None:
    """Time every case (this process's setting) and print one line each."""
    from triton.testing import do_bench

    timed = cases()
    for _, ours, theirs in timed:  # compile and tune outside the timing
        ours()
        theirs()
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, _, _ in timed}
    for _ in range(rounds):
        for name, ours, theirs in timed:
            times[name][0].append(do_bench(ours, warmup=25, rep=100))
            times[name][1].append(do_bench(theirs, warmup=25, rep=100))
    setting = os.environ.get(SETTING, "on")
    for name, (ours_ms, theirs_ms) in times.items():
        mine, cublas = statistics.median(ours_ms), statistics.median(theirs_ms)
        print(
            f"{setting:3s} {name:22s} ours {mine * 1e3:7.1f} us  cuBLAS {cublas * 1e3:7.1f} us"
            f"  cuBLAS/ours {cublas / mine:.3f}",
            flush=True,
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2, help="off/on process pairs")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per process")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.rounds)
        return 0
    status = 0
    for _ in range(args.pairs):
        for setting in ("off", "on"):
            environment = {**os.environ, SETTING: setting}
            command = [sys.executable, __file__, "--child", "--rounds", str(args.rounds)]
            status |= subprocess.run(command, env=environment, check=False).returncode  # noqa: S603
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
