"""Split-K's chunk count, swept: our op's time at each count against torch's.

    python benchmarks/split_sweep.py                 # on a GPU
    python benchmarks/split_sweep.py --smoke         # tiny shapes, Triton's interpreter

For each shape (the paper's convolution; decoding's 2-row ``mm`` through a
4096 x 4096 and a 4096 x 1024 weight), our op runs with its reduction pinned
to each count (``ninetoothed.library.pinned_splits``; 1 is the single
kernel) and unpinned (the rule's own choice, marked ``rule``); every time is
``triton.testing.do_bench``'s median, checked against torch first.  The
printed table says which count the rule should pick on this GPU: the
constants of ``ninetoothed.library.ops.split`` are calibrated on it.
"""

from __future__ import annotations

import os
import sys

SMOKE = "--smoke" in sys.argv
if SMOKE:  # read when Triton decorates a kernel: before anything imports triton
    os.environ["TRITON_INTERPRET"] = "1"

import functools  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from measure import Clock  # noqa: E402

COUNTS = (1, 2, 3, 4, 6, 8, 12, 16)


def cases(small: bool) -> list[tuple[str, str, list[tuple[int, ...]]]]:
    """(title, op name, input shapes)."""
    if small:
        return [("conv2d", "conv2d", [(2, 5, 9, 11), (7, 5, 3, 3)])]
    return [
        ("conv2d (4,512,14,14) x (512,512,3,3)", "conv2d", [(4, 512, 14, 14), (512, 512, 3, 3)]),
        ("mm (2,4096) x (4096,4096)", "mm", [(2, 4096), (4096, 4096)]),
        ("mm (2,4096) x (4096,1024)", "mm", [(2, 4096), (4096, 1024)]),
    ]


def main() -> None:
    """Print one row per shape and count."""
    device = "cpu" if SMOKE else "cuda"
    clock = Clock(device)
    ops = ours.module("nt_torch.ops")
    from ninetoothed.library.ops import split

    print(f"{torch.cuda.get_device_name() if not SMOKE else 'CPU'}; PROCESSORS={split.PROCESSORS}")
    print("| shape | count | ours (us) | torch (us) | torch time / ours | max error |")
    print("|---|---|---|---|---|---|")
    for title, name, shapes in cases(SMOKE):
        inputs = [torch.randn(*s, dtype=torch.float16, device=device) for s in shapes]
        reference = functools.partial(getattr(torch, name, None) or F.conv2d, *inputs)
        expected = reference()
        torch_us = clock.median_ms(reference) * 1e3
        for count in (*COUNTS, None):
            run = functools.partial(_call, getattr(ops, name), inputs, count)
            error = (run().float() - expected.float()).abs().max().item()
            us = clock.median_ms(run) * 1e3
            label = "rule" if count is None else str(count)
            ratio = torch_us / us
            print(f"| {title} | {label} | {us:.1f} | {torch_us:.1f} | {ratio:.3f} | {error:.2g} |")


def _call(op, inputs, count):
    """``op(*inputs)`` with its reduction in ``count`` chunks (None: the rule's)."""
    from ninetoothed.library import pinned_splits

    if count is None:
        return op(*inputs)
    with pinned_splits(count):
        return op(*inputs)


if __name__ == "__main__":
    main()
