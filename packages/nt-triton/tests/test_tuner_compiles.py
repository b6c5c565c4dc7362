"""How the tuner schedules its compiles: the slowest first, loads while the rest compile,
one pool of workers kept for the process (``nt_triton.tuner._core``, ``._workers``)."""

from __future__ import annotations

from typing import Any

import pytest

from nt_triton import _tuning as tuning
from nt_triton.tuner import _workers as workers
from nt_triton.tuner._core import Tuner, TuningCall

BLOCKS = (64, 16, 256, 32, 128)


class _Sizing:
    """One tile of ``B`` x 8 elements, loaded in a loop."""

    def tiles(self, values: dict[str, int]) -> tuning.Tiles:
        block = values["B"]
        return tuning.Tiles((block * 8,), (), block * 8, 0)


class _Pool:
    """Compiles every job at once, recording the order jobs came in and what the caller
    had loaded when each job finished."""

    def __init__(self, loaded: list[int]) -> None:
        self.order: list[int] = []
        self.limit: int | None = None
        self.loaded_when_done: list[list[int]] = []
        self._loaded = loaded

    def run(
        self, jobs: list[dict[str, Any]], budget: float, done: Any, limit: int | None = None
    ) -> list[dict[str, Any]]:
        self.limit = limit
        answers = []
        for index, job in enumerate(jobs):
            self.order.append(job["B"])
            answers.append({"ok": job["B"] != 128, "error": "over the compile budget (1 s)"})
            done(index, answers[-1])
            self.loaded_when_done.append(list(self._loaded))
        return answers


def _call(loaded: list[int], ran: list[int]) -> TuningCall:
    def launch(configuration: tuning.Configuration) -> Any:
        loaded.append(configuration.values["B"])
        return lambda: ran.append(configuration.values["B"])

    def timer(run: Any, count: int) -> list[float]:
        before = len(ran)
        run()
        return [abs(ran[before] - 32) + 1.0] * count

    job = lambda configuration: {"B": configuration.values["B"]}  # noqa: E731
    return TuningCall(("k",), {}, 2, job, launch, timer)


def test_the_likeliest_slowest_compile_starts_first_and_each_loads_as_it_compiles(monkeypatch):
    loaded: list[int] = []
    ran: list[int] = []
    pool = _Pool(loaded)
    monkeypatch.setattr(workers, "pool", lambda size: pool)
    monkeypatch.setenv("NINETOOTHED_COMPILE_WORKERS", "4")
    tuner = Tuner("k", "k_order", [tuning.Configuration({"B": b}) for b in BLOCKS], _Sizing())
    best, _ = tuner.tune(_call(loaded, ran))
    assert pool.order == [256, 128, 64, 32, 16]  # largest tiles first
    assert pool.limit == 4  # NINETOOTHED_COMPILE_WORKERS at once, whatever the pool holds
    # Each configuration is loaded as soon as its compile answers, not after all of them.
    assert pool.loaded_when_done == [[256], [256], [256, 64], [256, 64, 32], [256, 64, 32, 16]]
    assert sorted(loaded) == [16, 32, 64, 256]  # 128 went over budget: never loaded
    assert best.values == {"B": 32}


def test_the_pool_grows_for_a_larger_tuning_and_is_kept_for_a_smaller(monkeypatch):
    monkeypatch.setattr(workers, "_POOL", None)
    monkeypatch.setattr(workers.atexit, "register", lambda function: None)
    first = workers.pool(4)
    assert workers.pool(2) is first and first.size == 4  # no restart of the workers
    assert workers.pool(6) is first and first.size == 6
    assert first.workers == []  # none started until a run


@pytest.mark.parametrize("size", [0, 1])
def test_with_no_workers_or_one_candidate_nothing_goes_to_a_pool(monkeypatch, size):
    monkeypatch.setattr(workers, "pool", lambda size: pytest.fail("no pool"))
    monkeypatch.setenv("NINETOOTHED_COMPILE_WORKERS", str(size))
    loaded: list[int] = []
    blocks = BLOCKS if size == 0 else BLOCKS[:1]
    tuner = Tuner("k", "k_none", [tuning.Configuration({"B": b}) for b in blocks], _Sizing())
    tuner.tune(_call(loaded, []))
    assert sorted(loaded) == sorted(blocks)


def test_the_pool_reports_every_job_once_as_it_finishes(tmp_path, monkeypatch):
    from nt_triton.cache import _sources as sources

    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    crash = sources.store("import os\nos._exit(3)\n", "crash")
    pool = workers.CompilePool(2)
    heard: list[tuple[int, bool]] = []
    try:
        jobs = [{"path": str(crash)}, {"broken": True}, {"path": str(crash)}]
        answers = pool.run(jobs, 30.0, lambda index, answer: heard.append((index, answer["ok"])))
    finally:
        pool.close()
    assert sorted(heard) == [(0, False), (1, False), (2, False)]
    assert "died" in answers[0]["error"] and "KeyError" in answers[1]["error"]


def test_a_worker_that_died_while_idle_is_replaced_before_its_next_job():
    pool = workers.CompilePool(1)
    try:
        pool.start()
        pool.workers[0].kill()  # dead before the run: sending it a job fails
        answers = pool.run([{"broken": True}], 30.0)
    finally:
        pool.close()
    assert "KeyError" in answers[0]["error"]  # a new worker answered the job


def test_a_pool_grown_by_an_earlier_tuning_compiles_at_most_the_limit_at_once():
    pool = workers.CompilePool(3)
    busy: list[int] = []

    def done(index: int, answer: dict[str, Any]) -> None:
        busy.append(sum(worker.job is not None for worker in pool.workers))

    try:
        answers = pool.run([{"broken": True}] * 4, 30.0, done, limit=1)
    finally:
        pool.close()
    assert len(answers) == 4 and all("KeyError" in answer["error"] for answer in answers)
    assert busy and max(busy) <= 1, busy  # the next job had started: one at a time
