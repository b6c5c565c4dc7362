"""One NineToothed matmul, launched from PyTorch and from JAX, side by side.

    python benchmarks/frameworks.py

Kernel time: ``triton.testing.do_bench`` (CUDA events, median) for PyTorch;
for JAX, whose work runs on XLA's stream where torch's events do not see it,
the mean over 50 back-to-back calls of a jitted function, synchronised once
with ``block_until_ready`` at the end.  Host overhead per call: the mean host
time of 2000 launches of a 16-element vector add with no synchronisation
between them (the GPU finishes each long before the host issues the next).
Nothing is asserted about times.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for nt_examples

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402
import triton.testing  # noqa: E402

import ninetoothed  # noqa: E402
from ninetoothed import Tensor  # noqa: E402
from nt_examples import add as add_example  # noqa: E402
from nt_examples import matmul as matmul_example  # noqa: E402

SIZE = 4096
BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K = matmul_example.arrangement.__defaults__
CONFIG = {BLOCK_SIZE_M.name: 128, BLOCK_SIZE_N.name: 256, BLOCK_SIZE_K.name: 64}


def host_microseconds(call, count: int = 2000) -> float:
    """Mean host time per call, after a warm-up."""
    for _ in range(20):
        call()
    start = time.perf_counter()
    for _ in range(count):
        call()
    elapsed = time.perf_counter() - start
    return elapsed / count * 1e6


def main() -> None:
    kernel = ninetoothed.make(
        matmul_example.arrangement,
        matmul_example.application,
        (Tensor(2), Tensor(2), Tensor(2)),
        configs=[{**CONFIG, "num_warps": 8, "num_stages": 3}],
    )
    a = torch.randn(SIZE, SIZE, dtype=torch.float16, device="cuda")
    b = torch.randn(SIZE, SIZE, dtype=torch.float16, device="cuda")
    c = torch.empty(SIZE, SIZE, dtype=torch.float16, device="cuda")
    kernel(a, b, c)
    torch_ms = triton.testing.do_bench(lambda: kernel(a, b, c), return_mode="median")

    a_jax = jnp.asarray(a.cpu().numpy())
    b_jax = jnp.asarray(b.cpu().numpy())
    c_jax = jnp.zeros((SIZE, SIZE), jnp.float16)
    jitted = jax.jit(lambda x, y, z: kernel(x, y, z))
    result = jitted(a_jax, b_jax, c_jax).block_until_ready()
    difference = np.abs(np.asarray(result, np.float32) - c.float().cpu().numpy()).max()
    repeats = 50
    start = time.perf_counter()
    for _ in range(repeats):
        result = jitted(a_jax, b_jax, c_jax)
    result.block_until_ready()
    jax_ms = (time.perf_counter() - start) / repeats * 1e3

    small = ninetoothed.make(
        lambda x, y, z: (x.tile((16,)), y.tile((16,)), z.tile((16,))),
        add_example.application,
        (Tensor(1), Tensor(1), Tensor(1)),
    )
    x = torch.randn(16, device="cuda")
    z = torch.empty_like(x)
    x_jax = jnp.asarray(x.cpu().numpy())
    add_jitted = jax.jit(lambda p, q, r: small(p, q, r))
    add_jitted(x_jax, x_jax, x_jax).block_until_ready()
    overheads = {
        "torch.add": host_microseconds(lambda: torch.add(x, x, out=z)),
        "ninetoothed from torch": host_microseconds(lambda: small(x, x, z)),
        "ninetoothed from jax (jax.jit)": host_microseconds(
            lambda: add_jitted(x_jax, x_jax, x_jax)
        ),
        "ninetoothed from jax (eager)": host_microseconds(lambda: small(x_jax, x_jax, x_jax), 200),
    }
    torch.cuda.synchronize()

    print(f"device: {torch.cuda.get_device_name()}; matmul {SIZE}^3 float16, config {CONFIG}")
    print(f"max |jax - torch| = {difference}")
    print("| launched from | kernel time (ms) | TFLOP/s |")
    print("|---|---|---|")
    flops = 2 * SIZE**3
    for name, ms in (("torch (do_bench median)", torch_ms), ("jax (jit, mean of 50)", jax_ms)):
        print(f"| {name} | {ms:.4f} | {flops / ms / 1e9:.0f} |")
    print("| host overhead per call | µs |")
    print("|---|---|")
    for name, microseconds in overheads.items():
        print(f"| {name} | {microseconds:.1f} |")


if __name__ == "__main__":
    main()
