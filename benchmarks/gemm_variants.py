"""The library's GEMM with one program per tile against its persistent variant (GPU).

    python benchmarks/gemm_variants.py

``mm`` and ``bmm`` take the persistent variant for outputs of at least
``mm.PERSISTENT_ELEMENTS`` elements (``mm.uses_persistent``).  This times both
variants of the kernel, made directly (not through the ops, which choose one),
against cuBLAS over shapes on both sides of that threshold, interleaved with
``do_bench``, 5 rounds, after checking each result against float64.

On an H100 (2026-11-26), cuBLAS time over ours, one per tile -> persistent,
two runs: 4096^3 0.951 -> 0.958 and 0.936 -> 0.946, bmm 4 x 2048^3 0.925 ->
0.956 and 0.935 -> 0.962; 8192^3, 2048 x 8192 x 2048 and 4096 x 4096 x 14336
within the noise either way (0.950 -> 0.977, then 0.974 -> 0.972); below the
threshold bmm 8 x 512^3 1.052 -> 0.977 and 1.001 -> 0.982, 100 x 333 x 777
0.640 -> 0.605 and 0.601 -> 0.583 (``docs/tuning.md`` has the whole table).  One program
per tile then tuned over a space generated from the block sizes' bounds, before
``mm.CONFIGS``.
"""

from __future__ import annotations

import statistics
from typing import Any

import torch
from triton.testing import do_bench

import ninetoothed
from ninetoothed.library import mm

SHAPES = [
    (1, 4096, 4096, 4096),
    (4, 2048, 2048, 2048),
    (1, 8192, 8192, 8192),
    (1, 2048, 8192, 2048),
    (1, 4096, 4096, 14336),
    (1, 512, 4096, 4096),
    (1, 1024, 1024, 1024),
    (8, 512, 512, 512),
    (1, 100, 333, 777),
    (1, 128, 4096, 4096),
]
"""``(batch, M, K, N)``; a batch of 1 is ``mm``."""

VARIANTS = {"one per tile": mm.TUNING, "persistent": mm.PERSISTENT_TUNING}


def made(ndim: int, options: dict[str, Any]) -> Any:
    """The library's GEMM kernel for ``ndim``-D operands with ``make`` options ``options``."""
    premade = mm.premake(ndim)
    return ninetoothed.make(premade.arrangement, premade.application, premade.tensors, **options)


def time_shape(kernels: dict[tuple[str, int], Any], shape: tuple[int, int, int, int]) -> str:
    """One line: cuBLAS's time at ``(batch, M, K, N)`` over each variant's (medians)."""
    batch, m, k, n = shape
    ndim = 2 if batch == 1 else 3
    a = torch.randn(batch, m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(batch, k, n, device="cuda", dtype=torch.float16)
    if batch == 1:
        a, b = a[0], b[0]
    c = torch.empty((*a.shape[:-1], n), device="cuda", dtype=torch.float16)
    reference = a.double() @ b.double()
    calls = {"cublas": lambda: torch.matmul(a, b, out=c)}
    for name in VARIANTS:
        kernel = kernels[(name, ndim)]
        c.fill_(float("nan"))
        kernel(a, b, c)
        error = (c.double() - reference).norm() / reference.norm()
        assert error < 5e-3, f"{name} at {shape}: relative error {error:.3g}"
        calls[name] = lambda kernel=kernel: kernel(a, b, c)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _round in range(5):
        for name, call in calls.items():
            times[name].append(do_bench(call, warmup=25, rep=100))
    cublas = statistics.median(times["cublas"])
    ratios = "  ".join(f"{name} {cublas / statistics.median(times[name]):.3f}" for name in VARIANTS)
    return f"{shape}  cuBLAS {cublas:.4f} ms  cuBLAS/ours: {ratios}"


def main() -> None:
    """Time both variants and cuBLAS at each shape."""
    kernels = {(name, n): made(n, options) for name, options in VARIANTS.items() for n in (2, 3)}
    for shape in SHAPES:
        print(time_shape(kernels, shape), flush=True)


if __name__ == "__main__":
    main()
