"""Attention backward: the library's (``nt_torch.ops.scaled_dot_product_attention``,
FlashAttention-2's three kernels) vs torch's flash backward.

    python3 benchmarks/sdpa_backward.py            # on a GPU (float16)
    TRITON_INTERPRET=1 python3 benchmarks/sdpa_backward.py --small   # the harness only

Times ``torch.autograd.grad`` of the attention output, causal and not, for
both (the forward is not timed: the graph is built once and the backward
retained; torch's forward runs under its flash backend, so its backward is
FlashAttention-2's).  ``triton.testing.do_bench`` medians, interleaved over
rounds; also a small compiled block (a kernel under
``torch.compile(fullgraph=True)``) against eager.  The issue's floor: ours at
least 0.7x torch's flash backward (ratio = torch time / our time >= 0.7).  The
backward kernels tune on their first call (``CONFIGS`` of
``ninetoothed.library.scaled_dot_product_attention_backward``); the chosen
configurations are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # support.tutorial

from measure import Clock, interleaved_rounds  # noqa: E402
from support.tutorial import differentiable as examples  # noqa: E402

import nt_torch.ops  # noqa: E402
from ninetoothed.library import made_kernels  # noqa: E402


def _flash() -> contextlib.AbstractContextManager[None]:
    """Torch's flash backend on a GPU (elsewhere its default)."""
    if not torch.cuda.is_available():
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def _backward_functions(shape, causal, device, dtype):
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for _ in "qkv")
    do = torch.randn(shape, device=device, dtype=dtype)
    ours = nt_torch.ops.scaled_dot_product_attention(q, k, v, is_causal=causal)
    with _flash():
        theirs = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
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
    shapes = [(1, 2, 40, 16)] if arguments.small else [(4, 48, 1024, 64), (2, 16, 4096, 128)]
    dtype = torch.float16 if device == "cuda" else torch.float32
    clock = Clock(device)
    for shape in shapes:
        for causal in (False, True):
            functions, error = _backward_functions(shape, causal, device, dtype)
            times, failures = interleaved_rounds(functions, clock, arguments.rounds)
            medians = {name: statistics.median(ts) for name, ts in times.items() if ts}
            ratio = medians["torch"] / medians["ours"] if len(medians) == 2 else float("nan")
            print(
                f"sdpa backward {shape} {dtype} causal={causal}: "
                f"ours {medians.get('ours', float('nan')):.3f} ms, "
                f"torch {medians.get('torch', float('nan')):.3f} ms, torch/ours {ratio:.2f} "
                f"(floor 0.70), max |grad diff| {error:.2e} {failures or ''}"
            )
    for kernel in made_kernels("scaled_dot_product_attention_backward"):
        print(f"{kernel.spec.name}: {kernel.generated.best_config}")
    times, failures = interleaved_rounds(_compiled_block(device), clock, arguments.rounds)
    for name, ts in times.items():
        print(f"{name}: {statistics.median(ts) * 1e3:.1f} us {failures.get(name, '')}")


if __name__ == "__main__":
    main()
