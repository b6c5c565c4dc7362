"""A kernel call's host cost on the GPU path, measured on the CPU with the launch stubbed.

    TRITON_INTERPRET=1 python benchmarks/call_path.py [--rounds 15] [--calls 20000]

Runs the tiny float16 add (4096 elements, block size pinned at ``make``) on
CPU tensors through :func:`support.stub_gpu.stubbed_gpu`: the adapter, the
fast path's plans and its generated hot function as on a GPU, the launch
itself a Python function that does nothing.  Rows (median and best round of
µs per call, each round ``--calls`` calls; the rows take turns):

* ``kernel(x, y, z)``: what users call, through the kernel's ``__call__``;
* ``fast_path.call(x, y, z)``: the fast path's hot function called directly;
* ``torch.add(x, y, out=z)``: PyTorch's own call on the same CPU tensors.

The first two differ by what ``kernel(...)`` adds to the hot function.  To
time another checkout's call path, put its sources first on ``PYTHONPATH``
and pass its ``tests`` directory with ``--tests``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def rows() -> dict[str, Callable[[], Any]]:
    """The calls to time, made inside the stand-in GPU (left open for the timing)."""
    import torch
    from support.stub_gpu import stubbed_gpu
    from support.tutorial import add

    import ninetoothed
    from ninetoothed import Tensor

    stub = stubbed_gpu(record=False)
    stub.__enter__()  # held until the process ends
    tensors = (Tensor(1), Tensor(1), Tensor(1))
    kernel = ninetoothed.make(
        add.arrangement, add.application, tensors, configs=[{"BLOCK_SIZE": 1024}]
    )
    x, y, z = (torch.zeros(4096, dtype=torch.float16) for _ in range(3))
    kernel(x, y, z)  # installs the fast path
    kernel(x, y, z)  # makes the plan
    assert kernel.fast_path is not None, "no fast path: is TRITON_INTERPRET=1 set?"
    fast = kernel.fast_path.call
    return {
        "kernel(x, y, z)": lambda: kernel(x, y, z),
        "fast_path.call(x, y, z)": lambda: fast(x, y, z),
        "torch.add(x, y, out=z)": lambda: torch.add(x, y, out=z),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--tests", type=Path, default=ROOT / "tests")
    options = parser.parse_args()
    sys.path[:0] = [str(options.tests)]
    calls = rows()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(options.rounds):
        for name, call in calls.items():
            times[name].append(timeit.timeit(call, number=options.calls) / options.calls * 1e6)
    for name, values in times.items():
        print(f"{name:26} median {statistics.median(values):6.3f} µs  best {min(values):6.3f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
