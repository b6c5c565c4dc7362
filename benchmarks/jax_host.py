"""JAX's host cost per call of a tiny add, on the CPU, with the launch stubbed.

    JAX_PLATFORMS=cpu TRITON_INTERPRET=1 python benchmarks/jax_host.py [--profile]

Issue 12's JAX rows are measured on a GPU by ``benchmarks/launch.py``; this
measures the host path *up to the launch* anywhere: the kernel's launch (under
the interpreter a ``jax.pure_callback`` running Triton's interpreter,
milliseconds) is replaced by an XLA add of the two inputs, so ours costs what
``jax.jit(jnp.add)`` costs plus our host path.  Rows (CPU time of the calling
thread per call, so other processes on a shared machine count less; XLA runs
the computations on other threads; median of interleaved rounds):

* ``jax.jit(jnp.add)``: JAX's own dispatch of a jitted add;
* ours under ``jax.jit``: a jitted function calling the kernel (no Python of
  ours per call: the trace ran once);
* ours eagerly: the kernel called on arrays (``nt_jax.eager``).

``--profile`` adds a cProfile of the eager calls (tottime).  The output says
that the launch is stubbed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TRITON_INTERPRET", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]  # support.tutorial: the example kernels
N = 4096


def stubbed_launch(kernel: Any, bound: Any, roles: Any) -> list[Any]:
    """Instead of the interpreter's callback: an XLA add of the first two arrays."""
    import jax

    first, second = [a for a in roles.arguments if not isinstance(a, jax.ShapeDtypeStruct)][:2]
    return [first + second]


def cases() -> dict[str, Callable[[], Any]]:
    """The three calls, each checked once against ``x + y``."""
    import jax
    import jax.numpy as jnp
    from support.tutorial import add

    import ninetoothed
    from ninetoothed import Tensor
    from nt_jax import callbacks

    callbacks.call_interpreted = stubbed_launch
    tensors = (Tensor(1), Tensor(1), Tensor(1))
    kernel = ninetoothed.make(
        add.arrangement, add.application, tensors, configs=[{"BLOCK_SIZE": 1024}]
    )
    x = jnp.arange(N, dtype=jnp.float16) / 7
    y = jnp.ones(N, dtype=jnp.float16)
    out = jax.ShapeDtypeStruct((N,), jnp.float16)
    jitted = jax.jit(lambda a, b: kernel(a, b, out))
    plain = jax.jit(jnp.add)
    found = {
        "jax.jit(jnp.add)": lambda: plain(x, y),
        "ours under jax.jit": lambda: jitted(x, y),
        "ours, eager": lambda: kernel(x, y, out),
    }
    for name, call in found.items():
        if not bool(jnp.allclose(call(), x + y)):
            raise AssertionError(f"{name}: wrong result")
    return found


def per_call(call: Callable[[], Any], count: int) -> float:
    """CPU µs of this thread per call (the results are waited for after the clock stops)."""
    result = None
    began = time.thread_time()
    for _ in range(count):
        result = call()
    spent = time.thread_time() - began
    result.block_until_ready()  # type: ignore[attr-defined]
    return spent / count * 1e6


def main() -> int:
    """Print the table (and, with ``--profile``, where an eager call's time goes)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    found = cases()
    samples: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(args.rounds):
        for name, call in found.items():
            samples[name].append(per_call(call, args.calls))
    print(
        f"JAX host cost per call, CPU ({os.environ['JAX_PLATFORMS']}), launch stubbed (an XLA "
        f"add instead of the kernel); thread CPU µs, median of {args.rounds} rounds"
    )
    for name, values in samples.items():
        print(f"  {name:24} {statistics.median(values):7.1f}   (min {min(values):.1f})")
    if args.profile:
        import cProfile
        import pstats

        eager = found["ours, eager"]
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            eager()
        profile.disable()
        print(f"cProfile of {args.calls} eager calls (the jitted call is C++: in its caller):")
        pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(8)
    return 0


if __name__ == "__main__":
    sys.exit(main())
