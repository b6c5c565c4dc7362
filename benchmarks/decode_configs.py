"""Each configuration of the library's decoding GEMMs, pinned alone, against cuBLAS (GPU).

    python benchmarks/decode_configs.py                    # 1 to 16 rows, Llama-8B's K, N
    python benchmarks/decode_configs.py --shapes 1x4096x1024,4x14336x1024
    TRITON_INTERPRET=1 python benchmarks/decode_configs.py --small   # the harness only

What decides the thin and vector spaces: at each ``(M, K, N)`` shape, the library's
GEMM kernel in both forms a decoding product may take, with one configuration at a
time (the ``tl.dot`` thin tiles of ``mm.THIN_CONFIGS``, 16 rows and up, and the vector
form's ``mm.VECTOR_CONFIGS``, 1 to 4 rows), each result checked against float64 first,
then timed against ``torch.mm`` in interleaved rounds (``triton.testing.do_bench``
medians), beside ``ops.mm`` (what the op picks and tunes).  The second operand is a
transposed ``(N, K)`` weight, as a Linear layer passes it.  One line per shape:
cuBLAS's time, the op's ratio, and the six best configurations as cuBLAS time / ours.

On an H200 (2026-11-28, the probe this script was made from, 3 rounds): one row,
1024 columns, k = 4096: the thin tiles' best 0.86, the vector form's 1.28 (1 column
and steps of 4096, 4 warps); k = 14336: 0.56 against 1.01; two rows 0.89 against
1.13, four 0.86 against 1.00, eight 0.90 against 0.72 (``mm.vector_tallest``).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch
from gemm_configs import checked
from measure import Clock, device_or_refusal, interleaved_rounds

import ninetoothed
from ninetoothed.library import mm

SHAPES = tuple(
    (rows, k, n)
    for rows in (1, 2, 4, 16)
    for k, n in ((4096, 1024), (14336, 1024), (4096, 4096), (14336, 4096))
)
"""``(M, K, N)``: one to 16 tokens through Llama-8B's key/value, query and down weights."""

SMALL = ((3, 40, 24),)
"""The ``--small`` shape (the interpreter): two programs of :data:`SMALL_CONFIG`'s 16
columns, three steps of its 16 along ``k``, in either form."""

SMALL_CONFIG = (16, 16, 4, 1)
"""The one configuration ``--small`` makes of each form."""


def forms(rows: int) -> list[tuple[str, int, tuple[tuple[int, ...], ...]]]:
    """``(name, tallest, configurations)`` of each form a ``rows``-row output may take."""
    thin = mm.tallest_block(rows)
    found = [] if thin is None else [("thin", thin, mm.THIN_CONFIGS)]
    vector = mm.vector_tallest(1, rows, 1)
    if vector is not None:
        found.append(("vector", vector, mm.VECTOR_CONFIGS))
    return found


def made(tallest: int, config: tuple[int, ...]) -> Any:
    """The library's 2-D GEMM kernel of ``tallest`` rows with one configuration."""
    premade = mm.premake(2, tallest=tallest)
    pinned = mm.short_configuration(tallest, config)
    return ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, configs=[pinned]
    )


Calls = dict[str, Callable[[], object]]


def variants(shape: tuple[int, int, int], device: str, small: bool) -> tuple[Calls, list[str]]:
    """``{"cublas", "ops.mm" or "form config": call}`` at ``shape``, each result checked
    first; and a line for each configuration that failed to make, compile or compute."""
    from nt_torch import ops

    m, k, n = shape
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    b = (torch.randn(n, k, device=device, dtype=torch.float16) / k**0.5).t()
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    expected = a.double() @ b.double()
    calls: Calls = {
        "cublas": lambda: torch.mm(a, b, out=c),
        "ops.mm": lambda: ops.mm(a, b),
    }
    failures = []
    for name, tallest, configs in forms(m):
        for config in (SMALL_CONFIG,) if small else configs:
            making = functools.partial(made, tallest, config)
            call, failure = checked(making, a, b, c, expected)
            if call is None:
                failures.append(f"  {name} {config}: {failure}"[:200])
            else:
                calls[f"{name} {config}"] = call
    return calls, failures


def time_shape(calls: Calls, rounds: int, clock: Clock) -> str:
    """cuBLAS's time, the op's ratio and the six best configurations' (medians of
    interleaved rounds)."""
    times, failures = interleaved_rounds(calls, clock, rounds)
    medians = {name: statistics.median(times[name]) for name in calls if name not in failures}
    cublas = medians.pop("cublas")
    op = medians.pop("ops.mm")
    ranked = sorted((value, name) for name, value in medians.items())
    best = "; ".join(f"{name} {cublas / value:.3f}" for value, name in ranked[:6])
    return f"torch.mm {cublas * 1e3:.2f} us; ops.mm {cublas / op:.3f}; best first: {best}"


def main(argv: list[str]) -> int:
    """Time every shape; print a line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", help="comma-separated MxKxN (default: SHAPES)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="one tiny shape (the interpreter)")
    args = parser.parse_args(argv)
    device = device_or_refusal()
    if device is None:
        return 2
    shapes = SMALL if args.small else SHAPES
    if args.shapes:
        shapes = tuple(tuple(int(x) for x in s.split("x")) for s in args.shapes.split(","))  # type: ignore[misc]
    clock = Clock(device, warmup_ms=5.0, rep_ms=25.0)
    for shape in shapes:
        calls, failures = variants(shape, device, args.small)
        print("x".join(map(str, shape)), time_shape(calls, args.rounds, clock), flush=True)
        for line in failures:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
