"""A first call's tuning without a GPU: real compiles, stood-in loads and timings.

:func:`rank_main` is one rank of ``first_call_tuning.py --compare --stand-in``
(``torchrun`` over gloo, on the CPU): it tunes a small matrix product written
in Triton over :data:`CONFIGURATIONS` (24, as ``mm``'s space) with the tuner
itself, compiled for an ``sm_90`` target by the compile workers (Triton
compiles for a GPU it does not run on), each loaded from Triton's cache in
this process (a disk hit, as the real load's compile step), and "timed" by
a timer that answers from the configuration and sleeps as long as the GPU
would run.  It prints the same JSON line as a GPU run, so the comparison and
its per-rank phases run on any machine: what 1 rank and N ranks do, and in
what order, though the seconds of a shared CPU say little of a GPU host's.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

SOURCE = """
import triton
import triton.language as tl


@triton.jit
def stand_in_mm(a, b, c, m, n, k, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    columns = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, k, BLOCK_K):
        inner = start + tl.arange(0, BLOCK_K)
        x = tl.load(a + rows[:, None] * k + inner[None, :])
        y = tl.load(b + inner[:, None] * n + columns[None, :])
        accumulator = tl.dot(x, y, accumulator)
    tl.store(c + rows[:, None] * n + columns[None, :], accumulator.to(tl.float16))
"""

CONFIGURATIONS = [
    (block_m, block_n, block_k, warps, stages)
    for (block_m, block_n), block_k, (warps, stages) in itertools.product(
        [(64, 64), (128, 64), (128, 128), (128, 256)], [32, 64], [(4, 3), (8, 4), (8, 5)]
    )
]
"""``(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)``: 24, as many as ``mm`` tunes."""


def _sizing() -> Any:
    """Tiles by block sizes (the tuner orders compiles, and deals them, by their weight)."""
    from nt_triton import _tuning as tuning

    class Sizing:
        def tiles(self, values: dict[str, int]) -> tuning.Tiles:
            m, n, k = values["BLOCK_M"], values["BLOCK_N"], values["BLOCK_K"]
            return tuning.Tiles((m * k, k * n), (m * n,), m * k + k * n, m * n)

    return Sizing()


def _call(path: str, n: int) -> Any:
    """The tuning call: jobs for the workers, loads from Triton's cache, a stood-in timer."""
    from nt_triton import _tuning as tuning
    from nt_triton._launch import compiled
    from nt_triton.tuner import _worker as worker
    from nt_triton.tuner._core import TuningCall

    parameters = [("a", False), ("b", False), ("c", False), ("m", False), ("n", False)]
    parameters += [("k", False), ("BLOCK_M", True), ("BLOCK_N", True), ("BLOCK_K", True)]
    pointers = {index: ("fp16", True) for index in range(3)}

    def job(configuration: tuning.Configuration) -> dict[str, Any]:
        values = [0, 0, 0, n, n, n, *configuration.values.values()]
        special = compiled.specialise(parameters, values, pointers)
        return {
            "path": path,
            "name": "stand_in_mm",
            "signature": special.signature,
            "constexprs": special.constexprs,
            "attrs": special.attrs,
            "target": ["cuda", 90, 32],
            "num_warps": configuration.num_warps,
            "num_stages": configuration.num_stages,
            "maxnreg": None,
        }

    def launch(configuration: tuning.Configuration) -> Any:
        worker.compiled(json.loads(json.dumps(job(configuration))))  # a disk hit
        block_m, block_n = configuration.values["BLOCK_M"], configuration.values["BLOCK_N"]
        milliseconds = 0.2 * (128 * 256) / (block_m * block_n) ** 0.9 / 1.5

        def run() -> None:
            time.sleep(milliseconds / 1000)

        run.milliseconds = milliseconds  # type: ignore[attr-defined]
        return run

    def timer(run: Any, count: int) -> list[float]:
        for _ in range(count):
            run()
        return [run.milliseconds] * count

    return TuningCall(("stand-in", n), {}, 2, job, launch, timer)


def rank_main(jointly: bool) -> None:
    """One rank of a gloo job on the CPU; rank 0 prints the job's JSON line."""
    import torch.distributed as dist

    from nt_torch._distributed import process_group
    from nt_triton import _tuning as tuning
    from nt_triton import knobs
    from nt_triton.cache import _sources as sources
    from nt_triton.tuner import _together as together
    from nt_triton.tuner import _trace as trace
    from nt_triton.tuner import tune_together
    from nt_triton.tuner._core import Tuner

    dist.init_process_group("gloo")
    tune_together(jointly)
    path = str(sources.store(SOURCE, "stand_in_mm"))
    configurations = [
        tuning.Configuration({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, warps, stages)
        for m, n, k, warps, stages in CONFIGURATIONS
    ]
    tuner = Tuner("stand_in_mm", "stand_in_mm", configurations, _sizing())
    call = _call(path, 4096)
    spans = trace.record()
    dist.barrier()
    start = time.perf_counter()
    chosen = tuner.choose(call.key, "stand-in sm_90", lambda: call, process_group)
    seconds = time.perf_counter() - start
    mine = {
        "seconds": seconds,
        "chosen": [dict(chosen.values)],
        "phases": trace.summary(spans, start),
        "cpus": knobs.usable_cpus(),
        "compile_workers": together.workers(together.group(process_group)),
    }
    answers: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(answers, mine)
    if dist.get_rank() == 0:
        print(
            json.dumps(
                {
                    "ranks": len(answers),
                    "together": jointly,
                    "first_call_seconds": [round(a["seconds"], 3) for a in answers],
                    "same_configuration": all(a["chosen"] == answers[0]["chosen"] for a in answers),
                    "configurations": [a["chosen"] for a in answers],
                    "phases": [a["phases"] for a in answers],
                    "cpus": answers[0]["cpus"],
                    "compile_workers": [a["compile_workers"] for a in answers],
                }
            ),
            flush=True,
        )
    dist.destroy_process_group()
