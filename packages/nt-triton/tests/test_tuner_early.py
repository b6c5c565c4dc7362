"""A first tuning's workers and Triton's cache key get ready while the kernel is still being
made (``nt_triton.tuner._early``), and workers take the parent's key (``._worker``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nt_triton import _space_bounds as space_bounds
from nt_triton.cache import _tables as table
from nt_triton.tuner import _early as early
from nt_triton.tuner import _together as together
from nt_triton.tuner import _worker as worker
from nt_triton.tuner import _workers as workers


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[Any]:
    """A GPU machine stood in: background work runs at once, pools and the lean launcher
    are recorded instead of started; a fresh cache and no earlier starts."""
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NINETOOTHED_COMPILE_WORKERS", "6")
    monkeypatch.delenv("NINETOOTHED_TUNING", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.delenv("PADDLE_LOCAL_SIZE", raising=False)
    monkeypatch.setattr(early, "_on_a_gpu", lambda: True)
    monkeypatch.setattr(early, "_started", set())
    record: list[Any] = []

    def at_once(work: Any, name: str) -> Any:
        work()
        return SimpleNamespace(join=lambda: record.append(f"joined {name}"))

    monkeypatch.setattr(early, "_background", at_once)
    monkeypatch.setattr(early, "_DRIVER", [])
    monkeypatch.setattr(early, "_initialise_driver", lambda: record.append("driver"))

    class Pool:
        def __init__(self, size: int) -> None:
            self.size = size

        def warm(self) -> None:
            record.append(("pool", self.size))

    from nt_triton._launch import lean

    monkeypatch.setattr(workers, "pool", Pool)
    monkeypatch.setattr(lean, "extension", lambda: record.append("lean"))
    monkeypatch.setattr(workers, "triton_key", lambda: record.append("key"))
    return record


def _spec(label: str, count: int = 4, **options: Any) -> Any:
    """A spec of a kernel pinned to ``count`` configurations (or given ``options``)."""
    if not options:
        options = {"configs": [{"B": 16 << i} for i in range(count)]}
    return SimpleNamespace(label=label, options=options, meta_symbols={})


def test_a_new_kernel_starts_its_workers_once_and_the_lean_launcher_once(started):
    early.ahead(_spec("mm 0a"), "f0a")
    assert started == ["key", "driver", "lean", ("pool", 4)]  # no more workers than candidates
    early.ahead(_spec("mm 0a"), "f0a")
    assert started == ["key", "driver", "lean", ("pool", 4)]  # workers once per kernel
    early.ahead(_spec("mm 0b", count=9), None)  # no fingerprint: by label
    assert started[4:] == [("pool", 6)]  # NINETOOTHED_COMPILE_WORKERS at most; the rest once


def test_a_kept_kernel_starts_its_workers_unless_its_table_has_entries(started, tmp_path):
    early.ahead(_spec("mm 1a"), "f1a", tmp_path / "mm_1a.py", 3)
    assert started == ["key", "driver", "lean", ("pool", 3)]  # the kept kernel's own count
    table.write("mm_1b", "key", {"configuration": {}})
    early.ahead(_spec("mm 1b"), "f1b", tmp_path / "mm_1b.py", 3)
    assert started == ["key", "driver", "lean", ("pool", 3)]


@pytest.mark.parametrize(
    ("setting", "spec"),
    [
        ({"NINETOOTHED_TUNING": "off"}, _spec("mm 2a")),
        ({"NINETOOTHED_TUNING": "cached"}, _spec("mm 2b")),
        ({"NINETOOTHED_COMPILE_WORKERS": "0"}, _spec("mm 2c")),
        ({}, _spec("mm 2d", count=1)),
        ({}, _spec("mm 2e", num_warps=4, num_stages=3)),
    ],
    ids=["tuning off", "tuning cached", "no workers", "one configuration", "pinned options"],
)
def test_kernels_that_will_not_tune_in_workers_start_none(started, monkeypatch, setting, spec):
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    early.ahead(spec, "f2")
    # Every process that compiles needs the key and the driver, and its first load the
    # lean launcher (an untuned first call waited for its build after the compile).
    assert started == ["key", "driver", "lean"]


def test_a_tuning_call_waits_for_the_driver_started_in_the_background(monkeypatch):
    """The driver initialised in a background thread is waited for, not initialised a
    second time alongside, by the call about to use it."""
    import threading

    release, order = threading.Event(), []

    def slow_driver() -> None:
        release.wait(5)
        order.append("initialised")

    monkeypatch.setattr(early, "_DRIVER", [])
    monkeypatch.setattr(early, "_started", set())
    monkeypatch.setattr(early, "_on_a_gpu", lambda: True)
    monkeypatch.setattr(early, "_initialise_driver", slow_driver)
    monkeypatch.setattr(workers, "triton_key", lambda: None)
    monkeypatch.setenv("NINETOOTHED_TUNING", "off")  # no workers: the key and the driver
    early.ahead(_spec("mm 3a"), "f3a")
    threading.Timer(0.2, release.set).start()
    early.driver_settled()
    order.append("used")
    assert order == ["initialised", "used"]
    early.driver_settled()  # at once, once it is done


def test_a_space_s_size_is_bounded_before_it_is_built(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "5")
    symbols = SimpleNamespace(label="k", meta_symbols={"B": None})
    assert space_bounds.most_configurations(SimpleNamespace(**vars(symbols), options={})) == 5
    capped = SimpleNamespace(**vars(symbols), options={"max_num_configs": 3, "maxnreg": (None, 96)})
    assert space_bounds.most_configurations(capped) == 6  # each with and without the cap
    tuples = _spec("k", num_warps=(4, 8), num_stages=(2, 3, 4))
    assert space_bounds.most_configurations(tuples) == 6


def test_ranks_on_one_host_start_their_part_of_its_workers(started, monkeypatch):
    from nt_triton import knobs

    monkeypatch.delenv("NINETOOTHED_COMPILE_WORKERS")
    monkeypatch.setattr(knobs, "usable_cpus", lambda: 7)  # 6 workers for the host
    assert together.launcher_workers() == 6
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert together.launcher_workers() == 1  # 6 over 4 ranks: 2, 2, 1, 1
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert together.launcher_workers() == 2


def test_a_gpu_is_a_driver_s_device_node_without_the_interpreter(monkeypatch, tmp_path):
    node = tmp_path / "nvidiactl"
    node.touch()
    monkeypatch.setattr(early, "GPU_NODES", (str(tmp_path / "absent"), str(node)))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert early._on_a_gpu()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert not early._on_a_gpu()
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(early, "GPU_NODES", (str(tmp_path / "absent"),))
    assert not early._on_a_gpu()


def test_every_job_carries_the_parent_s_key(monkeypatch):
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(workers, "triton_key", lambda: "the parent's key")
    pool = workers.CompilePool(1)
    monkeypatch.setattr(pool, "start", lambda: None)
    monkeypatch.setattr(pool, "_run", lambda jobs, *rest: sent.extend(jobs) or [])
    pool.run([{"path": "a"}, {"path": "b"}], 1.0)
    assert [job[workers.KEY_FIELD] for job in sent] == ["the parent's key"] * 2


def test_a_worker_given_a_key_makes_triton_s_cache_keys_with_it(monkeypatch):
    from triton.runtime import cache

    monkeypatch.setattr(cache, "triton_key", cache.triton_key)  # put back afterwards
    monkeypatch.setattr(worker, "compiled", lambda job: SimpleNamespace(metadata=None))
    worker.run({workers.KEY_FIELD: "given-key"})
    part = SimpleNamespace(hash=lambda: "h")
    assert cache.get_cache_key(part, part, part, {}).startswith("given-key-")


def test_the_parent_computes_its_key_once_for_every_thread(monkeypatch):
    import threading

    from triton.runtime import cache

    calls: list[int] = []
    monkeypatch.setattr(workers, "_KEY", [])
    monkeypatch.setattr(cache, "triton_key", lambda: calls.append(1) or "k")
    threads = [threading.Thread(target=workers.triton_key) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1] and workers.triton_key() == "k"
