"""One rank of the tuning-together tests (``tests/test_tuning_together.py``).

``python -m support.tuning_together RANK SIZE BARRIER MODE``, run by
:func:`support.processes.run_processes` with ``NINETOOTHED_CACHE_DIR`` shared.
Each process joins a ``torch.distributed`` group over gloo (CPU) and tunes a
kernel whose runs are stubbed: the timer answers from :data:`TIMES`, which
differ from rank to rank as timings on two GPUs do, so ranks tuning alone
pick different configurations.  ``MODE``:

* ``same``: every rank tunes the same key;
* ``different``: each rank tunes its own key (the ranks disagree);
* ``fail``: rank 0's runs all fail (its share is pruned, the others' stand);
* ``workers``: as ``same``, compiling in a stand-in worker pool (:class:`_Pool`)
  that records each job it compiles and the share of the host each rank asks for.

``NT_TEST_CACHE_PER_RANK=1`` gives each rank a cache of its own (as ranks on
different hosts have).  ``NT_TEST_FRAMEWORK=paddle`` joins a Paddle job
instead (gloo, on the ports ``NT_TEST_PADDLE_PORTS`` lists: the store's, then
one per rank), whose group is ``nt_paddle``'s.

It answers, as one JSON line: the configuration chosen, the ones this rank
compiled, loaded, ran and timed in phase B, what a second tuner of the same kernel (reading the
table) chooses, the processes it counted on this host, how often it started its compile
workers ahead of the tuning, the names of the spans its tuning recorded
(:mod:`nt_triton.tuner._trace`), and the warnings raised.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

from nt_torch._distributed import process_group
from nt_triton import _tuning as tuning
from nt_triton import knobs
from nt_triton.tuner import _core as core
from nt_triton.tuner import _trace as trace
from nt_triton.tuner._core import Tuner, TuningCall
from support.processes import wait_for_the_others

BLOCKS = (64, 16, 256, 32, 128)
CONFIGURATIONS = [tuning.Configuration({"B": block}) for block in BLOCKS]

TIMES = {
    0: {64: 3.0, 16: 2.0, 256: 4.0, 32: 1.0, 128: 5.0},
    1: {64: 3.0, 16: 1.0, 256: 4.0, 32: 2.0, 128: 5.0},
}
"""Milliseconds per block size as each rank measures them (alone, rank 0 picks 32, rank 1 16)."""


class _Sizing:
    """Every configuration fits (one element per program)."""

    def tiles(self, values: Any) -> tuning.Tiles:
        return tuning.Tiles((1,), (), 0, 1)


class _Pool:
    """A stand-in compile pool: every job compiles at once; records the blocks compiled."""

    def __init__(self) -> None:
        self.compiled: list[int] = []
        self.limit: int | None = None
        self.warmed = 0

    def warm(self) -> None:
        self.warmed += 1

    def run(
        self, jobs: list[dict[str, Any]], budget: float, done: Any, limit: int | None = None
    ) -> list[dict[str, Any]]:
        self.limit = limit
        answers = []
        for index, job in enumerate(jobs):
            self.compiled.append(job["B"])
            answers.append({"ok": True})
            done(index, answers[-1])
        return answers


def stub_call(
    rank: int,
    key: tuple[Any, ...],
    ran: list[int],
    fail: bool,
    loaded: list[int] | None = None,
    in_process: bool = True,
    longer: list[int] | None = None,
) -> TuningCall:
    """A tuning call whose runs record their block size and whose timer reads :data:`TIMES`
    (``loaded``: where to record each configuration loaded; ``longer``: each one timed
    longer than phase A's runs, in phase B)."""

    def launch(configuration: tuning.Configuration) -> Any:
        block = configuration.values["B"]
        if loaded is not None:
            loaded.append(block)
        if fail:
            raise RuntimeError(f"out of resources on rank {rank}")

        def run() -> None:
            ran.append(block)

        run.block = block  # type: ignore[attr-defined]
        return run

    def timer(run: Any, count: int) -> list[float]:
        for _ in range(count):
            run()
        if longer is not None and count > core.PHASE_A_RUNS:
            longer.append(run.block)
        return [TIMES[rank % 2][run.block]] * count

    def job(configuration: tuning.Configuration) -> dict[str, Any]:
        return {"B": configuration.values["B"]}

    return TuningCall(key, {}, 4, job, launch, timer, in_process=in_process)


def _counting_workers() -> tuple[_Pool, list[int]]:
    """Compile through a :class:`_Pool`; record the ``sharing`` each tuning sizes it by."""
    pool = _Pool()
    sharing: list[int] = []
    compile_workers = knobs.compile_workers

    def counted(share: int = 1, index: int = 0) -> int:
        sharing.append(share)
        return compile_workers(share, index)

    core.workers.pool = lambda size: pool  # type: ignore[assignment]
    core.knobs.compile_workers = counted  # type: ignore[assignment]
    return pool, sharing


def _join(rank: int, size: int, barrier: Path) -> tuple[Any, Any]:
    """Join the job's group (torch's or Paddle's); returns its group function (the
    framework's ``HostReads.group``) and a function that waits for every rank and leaves."""
    if os.environ.get("NT_TEST_FRAMEWORK") != "paddle":
        torch.distributed.init_process_group(
            "gloo", init_method=f"file://{barrier / 'rendezvous'}", rank=rank, world_size=size
        )

        def leave() -> None:
            torch.distributed.barrier()
            torch.distributed.destroy_process_group()

        def refused(*args: Any, **kwargs: Any) -> None:
            raise AssertionError("tuning together gathers through the store, not the backend")

        # With NCCL a backend collective would go through the GPUs (and set NCCL up).
        torch.distributed.all_gather_object = refused

        return process_group, leave
    import paddle.distributed

    from nt_paddle._distributed import process_group as paddle_group

    store, *ports = os.environ["NT_TEST_PADDLE_PORTS"].split(",")
    endpoints = [f"127.0.0.1:{port}" for port in ports]
    os.environ.update(  # what paddle.distributed.launch sets for each rank
        PADDLE_MASTER=f"127.0.0.1:{store}", PADDLE_TRAINER_ID=str(rank),
        PADDLE_GLOBAL_RANK=str(rank), PADDLE_LOCAL_RANK=str(rank),
        PADDLE_RANK_IN_NODE=str(rank), PADDLE_TRAINERS_NUM=str(size),
        PADDLE_GLOBAL_SIZE=str(size), PADDLE_LOCAL_SIZE=str(size), PADDLE_NNODES="1",
        PADDLE_TRAINER_ENDPOINTS=",".join(endpoints), PADDLE_CURRENT_ENDPOINT=endpoints[rank],
        PADDLE_DISTRI_BACKEND="gloo",
    )  # fmt: skip
    paddle.distributed.init_parallel_env()
    return paddle_group, paddle.distributed.barrier


def main(argv: list[str]) -> None:
    rank, size, barrier, mode = int(argv[0]), int(argv[1]), Path(argv[2]), argv[3]
    if os.environ.get("NT_TEST_CACHE_PER_RANK"):  # as on two hosts: a table each
        os.environ["NINETOOTHED_CACHE_DIR"] += f"/rank{rank}"
    group, leave = _join(rank, size, barrier)
    wait_for_the_others(rank, barrier)
    key = ("k", rank) if mode == "different" else ("k",)
    ran: list[int] = []
    loaded: list[int] = []
    longer: list[int] = []
    pool, sharing = _counting_workers() if mode == "workers" else (_Pool(), [])
    spans = trace.record()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuner = Tuner("stubbed", "stubbed_0", CONFIGURATIONS, _Sizing())
        try:
            call = stub_call(
                rank, key, ran, mode == "fail" and rank == 0, loaded, mode != "workers", longer
            )
            chosen = tuner.choose(key, "gpu", lambda: call, group)
            error = ""
        except Exception as raised:  # noqa: BLE001 - answered to the test
            chosen, error = CONFIGURATIONS[0], f"{type(raised).__name__}: {raised}"
        tuned = sorted(trace.summary(spans, 0.0))
        again = Tuner("stubbed", "stubbed_0", CONFIGURATIONS, _Sizing())
        reread = again.choose(key, "gpu", lambda: stub_call(rank, key, [], False), group)
    leave()
    answer = {
        "chosen": chosen.values["B"],
        "ran": sorted(set(ran)),
        "compiled": pool.compiled,
        "loaded": loaded,
        "phase_b": sorted(longer),
        "sharing": sharing,
        "warmed": pool.warmed,
        "spans": tuned,
        "reread": reread.values["B"],
        "error": error,
        "warnings": [str(w.message) for w in caught],
    }
    print(json.dumps(answer))


if __name__ == "__main__":
    main(sys.argv[1:])
