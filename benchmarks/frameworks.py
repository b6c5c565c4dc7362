"""One NineToothed matmul, launched from PyTorch and from JAX, side by side.

    python benchmarks/frameworks.py

Kernel time, three ways:

* PyTorch: ``triton.testing.do_bench`` (CUDA events, median).
* JAX, whose work runs on XLA's stream where torch's events do not see it:
  one jitted program that launches the kernel ``LOOP`` times in a
  ``lax.fori_loop``; the median over 5 runs of its synchronised time, divided
  by ``LOOP`` (the one dispatch is spread over ``LOOP`` kernels).
* Both: the device-side durations of the kernel itself, as CUPTI records them
  through ``torch.profiler`` (it sees every kernel of the process, XLA's too),
  median over 20 launches from each framework.

Host overhead per call: the mean host time of 2000 launches of a 16-element
vector add with no synchronisation between them (the GPU finishes each long
before the host issues the next).  Nothing is asserted about times.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for baselines

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402
import triton.testing  # noqa: E402

import ninetoothed  # noqa: E402
from ninetoothed import Tensor  # noqa: E402
from ninetoothed.library import add as add_example  # noqa: E402
from ninetoothed.library import mm as matmul_example  # noqa: E402

SIZE = 4096
LOOP = 100
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


def profiled_kernel_ms(call, name: str, count: int = 20) -> float | None:
    """Median device duration (ms) of the kernels whose names contain ``name``,
    over ``count`` calls, as CUPTI reports them; None if none was recorded."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        for _ in range(count):
            call()
        torch.cuda.synchronize()
    durations = [
        event.device_time / 1e3
        for event in profiler.events()
        if name in event.name and event.device_time > 0
    ]
    return statistics.median(durations) if durations else None


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

    looped = jax.jit(lambda x, y, z: jax.lax.fori_loop(0, LOOP, lambda _, w: kernel(x, y, w), z))
    looped(a_jax, b_jax, c_jax).block_until_ready()
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        looped(a_jax, b_jax, c_jax).block_until_ready()
        runs.append((time.perf_counter() - start) / LOOP * 1e3)
    jax_ms = statistics.median(runs)

    device_ms = {
        "torch": profiled_kernel_ms(lambda: kernel(a, b, c), kernel.spec.name),
        "jax": profiled_kernel_ms(
            lambda: jitted(a_jax, b_jax, c_jax).block_until_ready(), kernel.spec.name
        ),
    }

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
    from baselines.add import add_kernel

    overheads = {
        "torch.add": host_microseconds(lambda: torch.add(x, x, out=z)),
        "hand-written Triton kernel, launched directly": host_microseconds(
            lambda: add_kernel.fn[(1,)](x, x, z, 16, BLOCK_SIZE=16)  # the untuned @triton.jit
        ),
        "ninetoothed from torch": host_microseconds(lambda: small(x, x, z)),
        "ninetoothed from jax (jax.jit)": host_microseconds(
            lambda: add_jitted(x_jax, x_jax, x_jax)
        ),
        "ninetoothed from jax (eager)": host_microseconds(lambda: small(x_jax, x_jax, x_jax), 200),
    }
    torch.cuda.synchronize()

    print(f"device: {torch.cuda.get_device_name()}; matmul {SIZE}^3 float16, config {CONFIG}")
    print(f"max |jax - torch| = {difference}")
    print("| launched from | timing | kernel time (ms) | TFLOP/s |")
    print("|---|---|---|---|")
    flops = 2 * SIZE**3
    rows = [
        ("torch", "do_bench median", torch_ms),
        ("jax", f"jit fori_loop of {LOOP}, median of 5", jax_ms),
        ("torch", "CUPTI kernel duration, median of 20", device_ms["torch"]),
        ("jax", "CUPTI kernel duration, median of 20", device_ms["jax"]),
    ]
    for framework, timing, ms in rows:
        if ms is None:
            print(f"| {framework} | {timing} | not recorded | |")
        else:
            print(f"| {framework} | {timing} | {ms:.4f} | {flops / ms / 1e9:.0f} |")
    print("| host overhead per call | µs |")
    print("|---|---|")
    for name, microseconds in overheads.items():
        print(f"| {name} | {microseconds:.1f} |")


if __name__ == "__main__":
    main()
