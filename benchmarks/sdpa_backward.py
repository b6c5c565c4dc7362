"""Causal attention backward: our FlashAttention-2 kernels vs torch's flash backward.

    python3 benchmarks/sdpa_backward.py            # on a GPU (float16)
    TRITON_INTERPRET=1 python3 benchmarks/sdpa_backward.py --small   # the harness only

Times ``torch.autograd.grad`` of the attention output for both (forward not
timed: the graph is built once and the backward retained), interleaved over
rounds, medians reported; also a small compiled block (our kernels under
``torch.compile(fullgraph=True)``) against eager.  The issue's floor: ours at
least 0.7x torch's flash backward (ratio = torch time / our time >= 0.7).
Tiles are auto-tuned on the first call (``BM``, ``BN`` in 16..64).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # support.tutorial

from measure import Clock, interleaved_rounds  # noqa: E402
from support.tutorial import differentiable as examples  # noqa: E402
from support.tutorial.flash_attention import FlashAttention  # noqa: E402


def _backward_functions(shape, device, dtype):
    flash = FlashAttention()
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for _ in "qkv")
    do = torch.randn(shape, device=device, dtype=dtype)
    scale = 1 / math.sqrt(shape[-1])
    ours, _ = flash.attention(q, k, v, scale)
    theirs = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    error = max(
        (a - b).abs().max().item()
        for a, b in zip(
            torch.autograd.grad(ours, (q, k, v), do, retain_graph=True),
            torch.autograd.grad(theirs, (q, k, v), do, retain_graph=True),
        )
    )
    return {
        "ours": lambda: torch.autograd.grad(ours, (q, k, v), do, retain_graph=True),
        "torch": lambda: torch.autograd.grad(theirs, (q, k, v), do, retain_graph=True),
    }, error


def _compiled_block(device):
    x = torch.randn(1 << 16 if device == "cuda" else 256, device=device)
    y = torch.randn_like(x)

    def block(x, y):
        z = torch.empty_like(x)
        examples.scaled_add_kernel(x, y, 0.5, z)
        return torch.relu(z) * 2

    compiled = torch.compile(block, fullgraph=True)
    compiled(x, y)
    return {"eager block": lambda: block(x, y), "compiled block": lambda: compiled(x, y)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="tiny shapes (interpreter)")
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shapes = [(1, 1, 64, 16)] if arguments.small else [(4, 48, 1024, 64), (2, 16, 4096, 128)]
    dtype = torch.float16 if device == "cuda" else torch.float32
    clock = Clock(device)
    for shape in shapes:
        functions, error = _backward_functions(shape, device, dtype)
        times, failures = interleaved_rounds(functions, clock, arguments.rounds)
        medians = {name: statistics.median(ts) for name, ts in times.items() if ts}
        ratio = medians["torch"] / medians["ours"] if len(medians) == 2 else float("nan")
        print(
            f"sdpa backward {shape} {dtype}: ours {medians.get('ours', float('nan')):.3f} ms, "
            f"torch {medians.get('torch', float('nan')):.3f} ms, torch/ours {ratio:.2f} "
            f"(floor 0.70), max |grad diff| {error:.2e} {failures or ''}"
        )
    times, failures = interleaved_rounds(_compiled_block(device), clock, arguments.rounds)
    for name, ts in times.items():
        print(f"{name}: {statistics.median(ts) * 1e3:.1f} us {failures.get(name, '')}")


if __name__ == "__main__":
    main()
