"""The launch and tuning engine's numbers (issue 12), one table from one run.

    python benchmarks/launch.py                 # a CUDA machine: every row; a few minutes
    python benchmarks/launch.py --no-matmul     # without the 4096^3 first-call rows
    python benchmarks/launch.py --paddle-stub   # adds Paddle's host cost (CPU, launch stubbed)

Rows (each measured on its own; one that fails prints its error in the table
and the others still run):

* µs per call of a tiny float16 add (4096 elements, output allocated by the
  caller): ``torch.add``, a hand-written ``@triton.jit`` kernel called the
  usual way, ours with the block size auto-tuned (``block_size()``), given as
  a constexpr at call time, pinned at call time, and pinned at ``make``
  (``configs=``); ours under ``jax.jit`` and eagerly, next to
  ``jax.jit(jnp.add)``.  The paths take turns, ``--rounds`` rounds of
  ``--calls`` calls each (synchronised once per round); the median round's
  host time per call is shown, with CUDA-event device time for torch rows.
  The JAX rows are also timed in bursts of 16 calls, synchronised between
  bursts off the clock: in a long loop a JAX call's host time can be the
  device's pace (XLA limits the computations in flight).
* First call of a 4096³ float16 matmul from cold caches (a fresh process with
  empty NineToothed and Triton cache directories), the chosen configuration's
  time and the best time of an exhaustive search over the same space (every
  configuration timed with ``triton.testing.do_bench``), then the first call
  of a second process sharing the caches.
* ``make`` of the matmul kernel, cold (empty cache) and with its generated
  source cached (``nt_triton.cache._reuse``), each in a fresh process, and again in
  the second process; ``import ninetoothed``.
* ``--paddle-stub``: Paddle's hot path on CPU tensors through Triton's real
  launcher over a stand-in libcuda that does nothing
  (``tools/fakecuda/check_fastpath.py --time``; Paddle's GPU build is not on
  the GPU machines), next to torch's over the same stand-in.

``OUT=/dir`` (or ``--out``) also writes ``/dir/launch.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]
# The example kernels it times are the tests' tutorial fixtures (support.tutorial).
SEARCH_PATH = os.pathsep.join(
    filter(None, [str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH")])
)
N = 4096


@dataclass
class Row:
    """One line of the table."""

    name: str
    value: str
    note: str = ""


def failed(name: str, error: BaseException) -> Row:
    """A row whose measurement raised: the error, shortened, instead of a number."""
    text = " ".join(str(error).split())[:160]
    return Row(name, "failed", f"{type(error).__name__}: {text}")


# ----------------------------------------------------------------- per call


def add_kernels() -> dict[str, tuple[Any, dict[str, Any]]]:
    """Our add kernel made the four ways, with the keywords each call passes."""
    import functools

    from support.tutorial import add

    import ninetoothed
    from ninetoothed import Tensor

    def tensors() -> tuple[Any, ...]:
        return (Tensor(1), Tensor(1), Tensor(1))

    constexpr = functools.partial(add.arrangement, BLOCK_SIZE=add.CONSTEXPR_BLOCK_SIZE)
    return {
        "ours, auto-tuned block_size()": (
            ninetoothed.make(add.arrangement, add.application, tensors()), {}),
        "ours, constexpr given at call time": (
            ninetoothed.make(constexpr, add.application, tensors()), {"BLOCK_SIZE": 1024}),
        "ours, meta block size pinned at call time": (
            ninetoothed.make(add.arrangement, add.application, tensors()), {"BLOCK_SIZE": 1024}),
        "ours, configuration pinned at make": (
            ninetoothed.make(add.arrangement, add.application, tensors(),
                             configs=[{"BLOCK_SIZE": 1024}]), {}),
    }  # fmt: skip


def torch_cases() -> tuple[list[Any], list[Row]]:
    """The torch per-call paths, each checked once (a wrong or failing one becomes a row)."""
    import launch_probe
    import torch
    import triton

    x, y = (torch.randn(N, device="cuda", dtype=torch.float16) for _ in range(2))
    out = torch.empty_like(x)
    grid = (triton.cdiv(N, launch_probe.BLOCK_SIZE),)
    kernel = launch_probe.add_kernel
    calls: dict[str, Callable[[], Any]] = {
        "torch.add(x, y, out=out)": lambda: torch.add(x, y, out=out),
        "@triton.jit kernel, usual call": lambda: kernel[grid](
            x, y, out, N, BLOCK=launch_probe.BLOCK_SIZE
        ),
    }
    for name, (ours, keywords) in add_kernels().items():
        calls[name] = functools_bind(ours, (x, y, out), keywords)
    cases, rows = [], []
    for name, call in calls.items():
        try:
            for _ in range(3):  # the miss (tuning, compiling), then the hot path
                out.zero_()
                call()
            torch.testing.assert_close(out, x + y)
            cases.append(launch_probe.Case(name, call, 0))
        except Exception as error:  # noqa: BLE001 - one failing path must not end the table
            rows.append(failed(name, error))
    return cases, rows


def functools_bind(kernel: Any, args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
    """``lambda: kernel(*args, **keywords)`` without a keyword dict when there is none."""
    a, b, c = args
    if keywords:
        return lambda: kernel(a, b, c, **keywords)
    return lambda: kernel(a, b, c)


def jax_cases() -> tuple[list[Any], list[Row]]:
    """Ours under ``jax.jit`` and eagerly, and ``jax.jit(jnp.add)``."""
    import jax
    import jax.numpy as jnp
    import launch_probe
    from support.tutorial import add

    gpu = jax.devices("gpu")[0]
    x = jax.device_put(jnp.arange(N, dtype=jnp.float16) / 7, gpu)
    y = jax.device_put(jnp.ones(N, dtype=jnp.float16), gpu)
    expected = x + y
    out = jax.ShapeDtypeStruct((N,), jnp.float16)
    kernel = add_kernels()["ours, configuration pinned at make"][0]
    jitted = jax.jit(lambda a, b: kernel(a, b, out))
    plain = jax.jit(jnp.add)
    calls = {
        "jax: jax.jit(jnp.add)": lambda: plain(x, y),
        "jax: ours under jax.jit": lambda: jitted(x, y),
        "jax: ours, eager": lambda: kernel(x, y, out),
    }
    del add
    cases, rows = [], []
    for name, call in calls.items():
        try:
            if not bool(jnp.allclose(call(), expected)):
                raise AssertionError("wrong result")
            cases.append(launch_probe.Case(name, call, 0, "jax"))
        except Exception as error:  # noqa: BLE001
            rows.append(failed(name, error))
    return cases, rows


def per_call_rows(calls: int, rounds: int, with_jax: bool) -> list[Row]:
    """Every per-call path, interleaved: the median round's host µs per call."""
    import launch_probe

    cases, rows = torch_cases()
    if with_jax:
        try:
            jax_found, jax_rows = jax_cases()
            cases += jax_found
            rows += jax_rows
        except Exception as error:  # noqa: BLE001
            rows.append(failed("jax rows", error))
    for case in cases:
        case.calls = calls if case.framework == "torch" else max(200, calls // 5)
    measured = launch_probe.measure(cases, rounds)
    table = []
    for row in measured:
        device = "" if row.device is None else f"; device {row.device:.1f} µs/call"
        busy = "" if row.busy is None else f"; host only (GPU kept busy) {row.busy:.1f} µs/call"
        note = f"+sync {row.total:.1f} µs/call{device}{busy}"
        table.append(Row(f"µs/call: {row.name}", f"{row.host:.1f}", note))
    jax_cases_found = [c for c in cases if c.framework == "jax"]
    in_program = in_program_rows(rounds) if jax_cases_found else []
    return table + burst_rows(jax_cases_found, rounds) + in_program + rows


BURST = 16
"""Calls per burst in :func:`burst_rows`: below XLA's limit on computations in flight."""


def burst_rows(cases: list[Any], rounds: int) -> list[Row]:
    """JAX host µs per call in bursts of :data:`BURST`, waiting for results between bursts
    off the clock.

    In a long loop JAX's host time can be the device's pace: once the
    computations in flight reach XLA's limit, each dispatch waits for one to
    finish.  Short bursts measure the host's own cost of a call.
    """
    table = []
    for case in cases:
        samples = []
        for _ in range(rounds):
            spent = 0.0
            for _ in range(max(1, case.calls // BURST)):
                case.call().block_until_ready()
                began = time.perf_counter()
                for _ in range(BURST):
                    result = case.call()
                spent += time.perf_counter() - began
                result.block_until_ready()
            samples.append(spent / (max(1, case.calls // BURST) * BURST) * 1e6)
        table.append(Row(f"µs/call: {case.name}, bursts of {BURST}",
                         f"{statistics.median(samples):.1f}",
                         "host only: synchronised between bursts, off the clock"))  # fmt: skip
    return table


CHAIN = 64
"""Kernel calls in one jitted program in :func:`in_program_rows`."""


def in_program_rows(rounds: int) -> list[Row]:
    """µs per kernel call inside one jitted program of :data:`CHAIN` dependent calls.

    This is how kernels run in a JAX model: a jitted step launches many of
    them, so JAX's dispatch of the program (tens of µs on these hosts, the
    ``jax.jit(jnp.add)`` row) is paid once per step, not per kernel.  Each call
    adds ``y`` to the previous call's result; XLA launches every call as its own
    kernel (ours is a custom call; ``jnp.add`` is kept from fusing by
    ``lax.optimization_barrier``).  Timed to completion, so the device's time per
    kernel is included: the per-call cost is the larger of the host's launch and
    the kernel itself.
    """
    import jax
    import jax.numpy as jnp

    gpu = jax.devices("gpu")[0]
    x = jax.device_put(jnp.zeros(N, dtype=jnp.float16), gpu)
    y = jax.device_put(jnp.ones(N, dtype=jnp.float16), gpu)
    out = jax.ShapeDtypeStruct((N,), jnp.float16)
    kernel = add_kernels()["ours, configuration pinned at make"][0]

    def ours(a: Any, b: Any) -> Any:
        for _ in range(CHAIN):
            a = kernel(a, b, out)
        return a

    def plain(a: Any, b: Any) -> Any:
        for _ in range(CHAIN):
            a = jax.lax.optimization_barrier(a + b)
        return a

    table = []
    for name, program in (("ours", jax.jit(ours)), ("jnp.add", jax.jit(plain))):
        if not bool(jnp.all(program(x, y) == CHAIN)):
            table.append(failed(f"jax: {name} in one jitted program", AssertionError("wrong")))
            continue
        samples = []
        for _ in range(max(rounds, 5)):
            began = time.perf_counter()
            for _ in range(20):
                result = program(x, y)
            result.block_until_ready()
            samples.append((time.perf_counter() - began) / (20 * CHAIN) * 1e6)
        table.append(Row(f"µs/call: jax: {name}, {CHAIN} calls in one jitted program",
                         f"{statistics.median(samples):.1f}",
                         "per kernel, device time included (XLA launches each call)"))  # fmt: skip
    return table


# ----------------------------------------------------------------- processes


def python(
    code: str, env: dict[str, str], timeout: float = 900, argv: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object last."""
    result = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": SEARCH_PATH, **env},
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"exit {result.returncode}: {result.stderr.strip()[-600:]}")
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


IMPORT = """
import json, time
began = time.perf_counter()
import ninetoothed
print(json.dumps({"seconds": time.perf_counter() - began}))
"""

MAKE = """
import json, os, sys, time
import ninetoothed
from support.tutorial import matmul  # makes the example's own kernels: into another cache
os.environ["NINETOOTHED_CACHE_DIR"] = sys.argv[1]
times = []
for _ in range(2):
    began = time.perf_counter()
    ninetoothed.make(matmul.arrangement, matmul.application, matmul.tensors)
    times.append(time.perf_counter() - began)
print(json.dumps({"seconds": times[0], "again": times[1]}))
"""


def host_cost_rows() -> list[Row]:
    """``import ninetoothed`` and ``make`` of the matmul, each in fresh processes, medians."""
    rows = []
    try:
        seconds = [python(IMPORT, {})["seconds"] for _ in range(5)]
        rows.append(Row("import ninetoothed (ms)", f"{statistics.median(seconds) * 1e3:.0f}",
                        "median of 5 processes; target ≤ 200"))  # fmt: skip
    except Exception as error:  # noqa: BLE001
        rows.append(failed("import ninetoothed", error))
    try:
        cold, cached, again = [], [], []
        for _ in range(3):
            directory = tempfile.mkdtemp(prefix="nt-make-")
            cold.append(python(MAKE, {}, argv=(directory,))["seconds"])
            answer = python(MAKE, {}, argv=(directory,))
            cached.append(answer["seconds"])
            again.append(answer["again"])
        rows.append(
            Row(
                "make(matmul), cold cache (ms)",
                f"{statistics.median(cold) * 1e3:.1f}",
                "median of 3 fresh processes, imports excluded; target ≤ 50",
            )
        )
        rows.append(Row("make(matmul), source cached (ms)",
                        f"{statistics.median(cached) * 1e3:.1f}",
                        "a second process on the same cache (its index); target ≤ 5"))  # fmt: skip
        rows.append(Row("make(matmul), again in that process (ms)",
                        f"{statistics.median(again) * 1e3:.1f}",
                        "the in-process memo"))  # fmt: skip
    except Exception as error:  # noqa: BLE001
        rows.append(failed("make(matmul)", error))
    return rows


FIRST_CALL = """
import json, sys, time
sys.path.insert(0, "benchmarks")
import torch
import ninetoothed
from support.tutorial import matmul
import launch_tuning
a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
c = torch.empty(4096, 4096, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
began = time.perf_counter()
kernel = ninetoothed.make(matmul.arrangement, matmul.application, matmul.tensors)
kernel(a, b, c)
torch.cuda.synchronize()
answer = {"seconds": time.perf_counter() - began}
answer["error"] = float((c.float() - (a.float() @ b.float())).abs().max())
answer.update(launch_tuning.report(kernel, (a, b, c), EXHAUSTIVE))
print(json.dumps(answer))
"""


def first_call_rows() -> list[Row]:
    """The 4096³ matmul's first call, cold then in a second process; the chosen vs the best."""
    caches = {
        "NINETOOTHED_CACHE_DIR": tempfile.mkdtemp(prefix="nt-cold-"),
        "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix="triton-cold-"),
        "NINETOOTHED_TUNING": "on",
    }
    rows = []
    try:
        cold = python(FIRST_CALL.replace("EXHAUSTIVE", "True"), caches)
        rows.append(
            Row(
                "matmul 4096³ fp16, first call, cold caches (s)",
                f"{cold['seconds']:.2f}",
                f"target ≤ 10; chose {cold['chosen']}; max |error| {cold['error']:.3g}",
            )
        )
        rows.append(
            Row(
                "  chosen configuration (ms)",
                f"{cold['chosen_ms']:.4f}",
                f"do_bench; {cold['configurations']} configurations in the space",
            )
        )
        rows.append(Row("  exhaustive best over the same space (ms)", f"{cold['best_ms']:.4f}",
                        f"{cold['best']}; chosen is {cold['chosen_ms'] / cold['best_ms'] - 1:+.1%} "
                        "(target within 2%)"))  # fmt: skip
    except Exception as error:  # noqa: BLE001
        rows.append(failed("matmul first call, cold", error))
    try:
        warm = python(FIRST_CALL.replace("EXHAUSTIVE", "False"), caches)
        rows.append(Row("matmul 4096³ fp16, first call, second process (s)",
                        f"{warm['seconds']:.2f}",
                        f"target ≤ 1; chose {warm['chosen']}"))  # fmt: skip
    except Exception as error:  # noqa: BLE001
        rows.append(failed("matmul first call, second process", error))
    return rows


def paddle_rows() -> list[Row]:
    """Paddle's and torch's hot paths over a stand-in libcuda that does nothing (CPU)."""
    script = ROOT / "tools" / "fakecuda" / "check_fastpath.py"
    result = subprocess.run(
        [sys.executable, str(script), "--time"], cwd=ROOT, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    rows = []
    for line in result.stdout.splitlines():
        if line.startswith("    ") and line.strip()[-1].isdigit():
            name, _, value = line.strip().rpartition(" ")
            rows.append(Row(f"µs/call, CPU, launch stubbed: {name.strip()}", value,
                            "tools/fakecuda: Triton's launcher over a no-op libcuda"))  # fmt: skip
    if not rows:
        rows.append(Row("Paddle, launch stubbed", "failed", result.stderr.strip()[-300:]))
    return rows


# ----------------------------------------------------------------- main


def describe() -> str:
    """The machine, in words."""
    parts = [f"python {sys.version.split()[0]}"]
    try:
        import torch

        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA GPU"
        parts += [gpu, f"torch {torch.__version__}"]
    except Exception:  # noqa: BLE001
        parts.append("no torch")
    try:
        import triton

        parts.append(f"triton {triton.__version__}")
    except Exception:  # noqa: BLE001
        pass
    return " | ".join(parts)


def gpu_available() -> bool:
    """Whether torch sees a CUDA GPU (the per-call and matmul rows need one)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def main() -> int:
    """Measure every row this machine can, print the table (and write it under ``$OUT``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per round (torch rows)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-matmul", action="store_true", help="skip the 4096³ first calls")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--paddle-stub", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    sections: list[tuple[str, Callable[[], list[Row]]]] = [("host costs", host_cost_rows)]
    if gpu_available():
        sections.insert(0, ("per call", lambda: per_call_rows(args.calls, args.rounds,
                                                              not args.no_jax)))  # fmt: skip
        if not args.no_matmul:
            sections.append(("matmul first call", first_call_rows))
    else:
        print("no CUDA GPU: the per-call and first-call rows are not measured", file=sys.stderr)
    if args.paddle_stub:
        sections.append(("paddle", paddle_rows))
    rows: list[Row] = []
    for name, section in sections:
        try:
            rows += section()
        except Exception as error:  # noqa: BLE001 - a failing section must not end the table
            traceback.print_exc()
            rows.append(failed(name, error))
    text = table(rows, describe(), time.perf_counter() - began)
    print(text)
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "launch.md").write_text(text)
    return 0


def table(rows: list[Row], machine: str, seconds: float) -> str:
    """The rows as one markdown table under a line naming the machine."""
    lines = [f"launch and tuning engine: {machine} ({seconds:.0f} s)", "",
             "| what | value | note |", "|---|---:|---|"]  # fmt: skip
    lines += [f"| {r.name} | {r.value} | {r.note} |" for r in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
