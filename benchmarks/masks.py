"""Which loads and stores of the compiled mm and sdpa kernels keep a mask (GPU).

Runs ``nt_torch.ops.mm`` and ``scaled_dot_product_attention`` once (tuning
and compiling every configuration) with a fresh Triton cache, at sizes the
blocks divide and at ragged ones, and reads the Triton IR Triton kept of
every compiled kernel: where the sizes divide, no ``tt.load``/``tt.store``
should have a mask (``nt_triton._codegen.divisibility``).

    python benchmarks/masks.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from nt_triton._gpu_check import masked_memory_operations


def report(cache: Path, label: str) -> None:
    """Per compiled kernel in ``cache``: its masked and unmasked memory operations."""
    for path in sorted(cache.rglob("*.ttir")):
        with_mask, without = masked_memory_operations(path.read_text())
        print(f"{label:28} {path.stem:40} masked {with_mask:2}  unmasked {without:2}")


CASES = ("mm 4096", "mm 4095", "sdpa 1024", "sdpa 1000")
"""mm of (n, n) matrices; sdpa of (4, 48, length, 64) float16 tensors."""


def case(name: str) -> None:
    """Run one case (in this process, whose Triton cache is fresh)."""
    import torch

    import nt_torch.ops as ops

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float16, device="cuda")

    op, size = name.split()
    n = int(size)
    if op == "mm":
        ops.mm(randn(n, n), randn(n, n))
    else:
        ops.scaled_dot_product_attention(*(randn(4, 48, n, 64) for _ in range(3)))
    torch.cuda.synchronize()


def main() -> int:
    if len(sys.argv) > 1:
        case(" ".join(sys.argv[1:]))
        return 0
    for name in CASES:
        # A process per case: Triton and the tuner's workers read the cache folder from
        # the environment when they start.
        cache = Path(tempfile.mkdtemp(prefix="nt-masks-"))
        environment = {**os.environ, "TRITON_CACHE_DIR": str(cache)}
        subprocess.run([sys.executable, __file__, *name.split()], env=environment, check=True)
        report(cache, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
