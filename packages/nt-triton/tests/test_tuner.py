"""The tuner (``nt_triton.tuner``): choice, restore, persistence, lock, budgets, progress."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest
import torch

import ninetoothed
from ninetoothed import Tensor, block_size
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.hookspecs import HostReads
from nt_torch import fastpath as torch_fastpath
from nt_torch.adapter import TorchAdapter
from nt_triton import _tuning as tuning
from nt_triton._launch.tuning_calls import restores
from nt_triton.cache import _sources as nt_cache
from nt_triton.cache import _tables as table
from nt_triton.tuner import export_table, import_table
from nt_triton.tuner._core import Tuner, TuningCall
from nt_triton.tuner._progress import Progress
from nt_triton.tuner._workers import CompilePool

CONFIGS = [tuning.Configuration({"B": b}) for b in (64, 16, 256, 32)]


def fake_call(z, x, runs, key=("k",)):
    """Each configuration's run adds x into z (an in-place kernel); B=32 is the fastest."""

    def launch(configuration):
        def run():
            runs.append(configuration.values["B"])
            z.add_(x)

        return run

    def timer(run, count):
        before = len(runs)
        for _ in range(count):
            run()
        block = runs[before]
        return [abs(block - 32) + 1.0] * count

    return TuningCall(
        key=key,
        values={},
        element_bytes=4,
        job=lambda configuration: {},
        launch=launch,
        timer=timer,
        restores=[torch_fastpath.snapshot(z)],
        in_process=True,
    )


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NINETOOTHED_TUNING", "on")
    return tmp_path


def test_tuning_picks_the_fastest_and_leaves_an_in_place_argument_as_it_was(cache):
    z, x = torch.zeros(8), torch.ones(8)
    runs = []
    tuner = Tuner("inplace", "inplace_0", CONFIGS, None)
    tuner.sizing = _no_sizing()
    chosen = tuner.choose(("k",), "gpu", lambda: fake_call(z, x, runs))
    assert chosen.values == {"B": 32}
    assert len(runs) > len(CONFIGS)  # every configuration ran, some many times
    assert torch.equal(z, torch.zeros(8)), "tuning runs must not leave their writes behind"


def test_results_persist_across_tuners_and_export_import(cache, tmp_path_factory):
    z, x = torch.zeros(4), torch.ones(4)
    first = Tuner("k", "k_1", CONFIGS, _no_sizing())
    first.choose(("k",), "gpu", lambda: fake_call(z, x, []))

    def must_not_tune():
        raise AssertionError("a persisted result must not be tuned again")

    second = Tuner("k", "k_1", CONFIGS, _no_sizing())  # another process, same kernel
    assert second.choose(("k",), "gpu", must_not_tune).values == {"B": 32}
    exported = tmp_path_factory.mktemp("export") / "table.json"
    assert export_table(exported) == 1
    table.clear()
    assert table.read("k_1") == {}
    assert import_table(exported) == 1
    third = Tuner("k", "k_1", CONFIGS, _no_sizing())
    assert third.choose(("k",), "gpu", must_not_tune).values == {"B": 32}


def test_cached_mode_never_tunes(cache, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_TUNING", "cached")
    tuner = Tuner("k", "k_2", CONFIGS, _no_sizing())
    with pytest.warns(UserWarning, match="NINETOOTHED_TUNING=cached"):
        chosen = tuner.choose(("k",), "gpu", lambda: pytest.fail("tuned"))
    assert chosen is CONFIGS[0]


def test_first_calls_from_two_threads_tune_once(cache):
    calls = []
    z, x = torch.zeros(4), torch.ones(4)
    tuner = Tuner("k", "k_3", CONFIGS, _no_sizing())

    def slow_call():
        calls.append(1)
        time.sleep(0.2)
        return fake_call(z, x, [])

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(tuner.choose(("k",), "gpu", slow_call)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and results[0] == results[1]


def test_when_nothing_compiles_the_error_shows_the_compiler_and_the_application(cache):
    """Every configuration failing (an application Triton rejects) names the failure
    kinds, the application's definition, and the end of the first failure's text."""
    z, x = torch.zeros(4), torch.ones(4)
    call = fake_call(z, x, [])
    lines = [f"    generated line {i}" for i in range(20)]
    excerpt = "\n".join([*lines, "        ^", "NotImplemented"])

    def launch(configuration):
        raise RuntimeError(excerpt)

    call.launch = launch
    tuner = Tuner("broken", "broken_0", CONFIGS, _no_sizing(), "app at /x/y.py:3")
    with pytest.raises(LaunchError) as caught:
        tuner.choose(("k",), "gpu", lambda: call)
    message = str(caught.value)
    assert "{'RuntimeError': 4} (the application is app at /x/y.py:3)" in message
    assert message.endswith("generated line 19\n        ^\nNotImplemented")
    assert "generated line 5\n" not in message, "only the end of a long compiler message"


def test_a_compile_over_budget_or_crashing_is_pruned_not_hung(tmp_path, monkeypatch):
    # Written through the cache, as generated kernels are: it loads only those.
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    hang = nt_cache.store("import time\ntime.sleep(60)\n", "hang")
    crash = nt_cache.store("import os\nos._exit(3)\n", "crash")
    pool = CompilePool(2)
    try:
        began = time.perf_counter()
        answers = pool.run([{"path": str(hang)}, {"path": str(crash)}], budget=3.0)
        elapsed = time.perf_counter() - began
    finally:
        pool.close()
    assert elapsed < 30
    assert "over the compile budget" in answers[0]["error"]
    assert not answers[1]["ok"]


def test_progress_shows_counts_and_the_best(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_TUNING_PROGRESS", "1")
    stream = io.StringIO()
    progress = Progress("matmul", 4, stream)
    progress.update(force=True, compiled=2, best="0.2 ms BLOCK=64")
    progress.done("BLOCK=64")
    text = stream.getvalue()
    assert "compiled 2/4" in text and "best 0.2 ms BLOCK=64" in text and "tuned matmul" in text
    monkeypatch.setenv("NINETOOTHED_TUNING_PROGRESS", "0")
    quiet = io.StringIO()
    Progress("matmul", 4, quiet).update(force=True, compiled=1)
    assert quiet.getvalue() == ""


def test_restores_cover_in_place_and_aliased_outputs_only():
    def arrangement(x, y, z, BLOCK=block_size()):  # noqa: B008
        return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))

    def application(x, y, z):
        y = y + x  # noqa: F841
        z = x  # noqa: F841

    kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    snapshots = []
    reads = HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=("{}.shape",),
        device_of=lambda t: 0,
        raw_stream=lambda i: 0,
        current_device=None,
        device_guard=lambda i: None,
        snapshot=lambda t: snapshots.append(t) or (lambda: None),
    )
    adapter = TorchAdapter()
    x, y, z = torch.ones(8), torch.ones(8), torch.ones(8)
    restores(kernel.generated, reads, adapter.bind(kernel.generated, (x, y, z), {}))
    assert [id(t) for t in snapshots] == [id(y)]  # y is read and written; z only written
    snapshots.clear()
    restores(kernel.generated, reads, adapter.bind(kernel.generated, (x, y, x), {}))  # z aliases x
    assert {id(t) for t in snapshots} == {id(y), id(x)}


def _no_sizing():
    class Everything:
        def tiles(self, values):
            return tuning.Tiles((1,), (), 0, 1)

    return Everything()


def test_the_command_line_exports_imports_and_clears(cache, tmp_path_factory, capsys):
    from nt_triton.tuner.__main__ import main

    z, x = torch.zeros(4), torch.ones(4)
    Tuner("k", "k_cli", CONFIGS, _no_sizing()).choose(("k",), "gpu", lambda: fake_call(z, x, []))
    exported = tmp_path_factory.mktemp("cli") / "table.json"
    assert main(["export", str(exported)]) == 0
    assert main(["clear"]) == 0
    assert table.read("k_cli") == {}
    assert main(["import", str(exported)]) == 0
    assert table.read("k_cli") != {}
    assert main(["where"]) == 0
    assert str(table.directory()) in capsys.readouterr().out
    bad = tmp_path_factory.mktemp("cli") / "bad.json"
    bad.write_text("{}")
    assert main(["import", str(bad)]) == 1
    assert "not a NineToothed tuning table" in capsys.readouterr().err


def test_results_are_kept_per_device_model(cache):
    """Two kinds of GPU in one process (or one table shared by two hosts) tune each."""
    z, x = torch.zeros(4), torch.ones(4)
    tuned = []

    def call():
        tuned.append(1)
        return fake_call(z, x, [])

    tuner = Tuner("k", "k_models", CONFIGS, _no_sizing())
    for device_name in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"):
        assert tuner.choose(("k",), device_name, call).values == {"B": 32}
    assert len(tuned) == 2, "each device model tunes once"
    models = {json.loads(key)[0] for key in table.read("k_models")}
    assert models == {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"}
