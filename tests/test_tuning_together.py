"""The ranks of a job tune together (``nt_triton.tuner.tune_together``).

Two processes join a ``torch.distributed`` group over gloo on the CPU and tune
a stubbed kernel whose timings differ from rank to rank
(``tests/support/tuning_together.py``): alone they pick different
configurations; together each runs its share of the candidates, and both
take the same winner, which the shared table then holds.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from support.processes import run_processes
from support.tuning_together import BLOCKS

from nt_triton import knobs
from nt_triton.tuner import _together as together
from nt_triton.tuner import _trace as trace
from nt_triton.tuner import tune_together
from nt_triton.tuner._core import TuningCall

CHILD = "support.tuning_together"

ALONE_SPANS = ["compile", "first run", "load", "phase A", "phase B", "write"]
TOGETHER_SPANS = ALONE_SPANS + ["agree", "gather", "leaders", "start workers"]
"""The tuner's spans (:mod:`nt_triton.tuner._trace`) alone and tuning together."""


def ranks(
    tmp_path: Path,
    mode: str,
    switch: str,
    per_rank: str = "",
    workers: str = "0",
    framework: dict[str, str] | None = None,
) -> list[dict]:
    extra = {
        **(framework or {}),
        "NT_TEST_CACHE_PER_RANK": per_rank,
        "NINETOOTHED_CACHE_DIR": str(tmp_path / "cache"),
        "NINETOOTHED_TUNING": "on",
        "NINETOOTHED_TUNE_TOGETHER": switch,
        "NINETOOTHED_COMPILE_WORKERS": workers,
        "LOCAL_WORLD_SIZE": "2",
        "GLOO_SOCKET_IFNAME": "lo",
    }
    return run_processes(CHILD, 2, tmp_path / "barrier", [mode], extra=extra, timeout=120)


def test_ranks_tuning_together_split_the_candidates_and_take_the_same_winner(tmp_path):
    first, second = ranks(tmp_path, "same", "1")
    assert first["chosen"] == second["chosen"] == 16  # rank 1's share holds the fastest
    assert first["ran"] == [64, 128, 256] and second["ran"] == [16, 32]  # every 2nd from each
    assert first["reread"] == second["reread"] == 16  # the table holds the winner
    # Phase B times the leaders of all the ranks' phase A (16, 32, 64), each on the rank
    # holding it: not every rank its own best three.
    assert first["phase_b"] == [64] and second["phase_b"] == [16, 32]


def test_each_candidate_is_compiled_loaded_and_timed_by_exactly_one_rank(tmp_path):
    first, second = ranks(tmp_path, "workers", "1", workers="")
    every = sorted(BLOCKS)
    for stage in ("compiled", "loaded", "ran"):
        mine, theirs = first[stage], second[stage]
        assert sorted(mine + theirs) == every, (stage, mine, theirs)  # once in all
    assert sorted(first["compiled"]) == first["ran"] and sorted(second["compiled"]) == second["ran"]
    # Each rank sizes its compile workers as one of the two processes on this host, and
    # starts them before the ranks agree (once: the tuning then finds them started).
    assert first["sharing"] == second["sharing"] == [2, 2]
    assert first["warmed"] == second["warmed"] == 1
    # Where the time goes, as the benchmark prints it.
    assert first["spans"] == second["spans"] == sorted(TOGETHER_SPANS + ["worker compile"])
    assert first["chosen"] == second["chosen"] == first["reread"] == second["reread"] == 16


def test_the_ranks_of_a_paddle_job_tune_together_too(tmp_path):
    pytest.importorskip("paddle")
    paddle = {"NT_TEST_FRAMEWORK": "paddle", "NT_TEST_PADDLE_PORTS": ",".join(_free_ports(3))}
    first, second = ranks(tmp_path, "workers", "1", workers="", framework=paddle)
    assert sorted(first["ran"] + second["ran"]) == sorted(BLOCKS)  # each once
    assert sorted(first["compiled"] + second["compiled"]) == sorted(BLOCKS)
    assert first["sharing"] == second["sharing"] == [2, 2]
    assert first["chosen"] == second["chosen"] == first["reread"] == second["reread"] == 16


def _free_ports(count: int) -> list[str]:
    """Ports free now (for Paddle's store and ranks)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for one in sockets:
            one.bind(("127.0.0.1", 0))
        return [str(one.getsockname()[1]) for one in sockets]
    finally:
        for one in sockets:
            one.close()


def test_ranks_with_tables_of_their_own_still_agree(tmp_path):
    first, second = ranks(tmp_path, "same", "1", per_rank="1")
    assert first["chosen"] == second["chosen"] == first["reread"] == second["reread"] == 16
    assert not first["warnings"] and not second["warnings"]


def test_with_the_switch_off_each_rank_tunes_alone_as_before(tmp_path):
    first, second = ranks(tmp_path, "same", "0", per_rank="1")
    assert first["ran"] == second["ran"] == [16, 32, 64, 128, 256]
    assert (first["chosen"], second["chosen"]) == (32, 16)  # why tuning together exists
    assert first["phase_b"] == second["phase_b"] == [16, 32, 64]  # each its own best three
    assert first["spans"] == second["spans"] == sorted(ALONE_SPANS)  # no collective


def test_the_trace_records_nothing_until_asked():
    assert not trace._RECORDING
    with trace.span("agree"):
        trace.add("worker compile", 1.0)
    spans = trace.record()
    try:
        with trace.span("agree"):
            trace.add("worker compile", 1.0)
        folded = trace.summary(spans, spans[0][1] - 2.0)
    finally:
        trace._RECORDING.clear()
    assert list(folded) == ["worker compile", "agree"]  # in order of first start
    assert folded["worker compile"]["seconds"] == 1.0 and folded["agree"]["count"] == 1
    assert folded["worker compile"]["first"] == 2.0


def test_ranks_about_to_tune_different_keys_warn_and_tune_alone(tmp_path):
    first, second = ranks(tmp_path, "different", "1", per_rank="1")
    assert (first["chosen"], second["chosen"]) == (32, 16)
    assert first["ran"] == second["ran"] == [16, 32, 64, 128, 256]
    for answer in (first, second):
        assert any("tune different things" in w for w in answer["warnings"]), answer


def test_a_rank_whose_share_fails_takes_the_winner_of_the_others(tmp_path):
    first, second = ranks(tmp_path, "fail", "1")
    assert not first["error"] and not second["error"]
    assert first["chosen"] == second["chosen"] == 16


def test_without_a_group_or_with_the_switch_off_no_collective_is_made(monkeypatch):
    class Refusing:
        rank, size = 0, 2

        def all_gather(self, value):
            raise AssertionError("no collective without tuning together")

    monkeypatch.delenv("NINETOOTHED_TUNE_TOGETHER", raising=False)
    assert together.group(lambda: Refusing()) is None  # off by default
    try:
        tune_together()
        assert together.group(None) is None  # the framework has no group
        assert together.group(lambda: None) is None  # none initialised
        assert isinstance(together.group(lambda: Refusing()), Refusing)
        tune_together(False)
        monkeypatch.setenv("NINETOOTHED_TUNE_TOGETHER", "1")
        assert together.group(lambda: Refusing()) is None  # the switch overrides the variable
    finally:
        together._SWITCH[0] = None


@pytest.mark.parametrize(
    ("value", "expected"), [("1", True), ("on", True), ("0", False), ("", False)]
)
def test_the_environment_variable_switches_it(monkeypatch, value, expected):
    monkeypatch.setenv("NINETOOTHED_TUNE_TOGETHER", value)
    assert knobs.tune_together() is expected


@pytest.mark.parametrize(
    ("cpus", "alone", "two"),
    [(32, 16, (8, 8)), (16, 15, (8, 7)), (2, 1, (1, 1))],  # what one alone has, shared out
)
def test_ranks_on_one_host_share_its_compile_workers(monkeypatch, cpus, alone, two):
    class Four:
        rank, size = 1, 4

    monkeypatch.delenv("NINETOOTHED_COMPILE_WORKERS", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setattr(knobs, "usable_cpus", lambda: cpus)
    assert together.sharing(Four()) == 2
    assert together.local_index(Four()) == 1  # rank 1 of 4, two a host
    assert together.workers(Four()) == two[1]
    assert tuple(knobs.compile_workers(2, index) for index in (0, 1)) == two
    assert knobs.compile_workers() == together.workers(None) == alone
    monkeypatch.setenv("LOCAL_RANK", "0")  # torchrun's word wins
    assert together.local_index(Four()) == 0 and together.workers(Four()) == two[0]
    assert together.share(list(range(10)), Four()) == [1, 5, 9]


def test_usable_cpus_are_the_affinity_within_a_container_quota(monkeypatch, tmp_path):
    read_quota = knobs._cgroup_quota
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(12)), raising=False)
    monkeypatch.setattr(knobs, "_cgroup_quota", lambda: None)
    assert knobs.usable_cpus() == 12
    monkeypatch.setattr(knobs, "_cgroup_quota", lambda: 3)
    assert knobs.usable_cpus() == 3
    quota = tmp_path / "cpu.max"
    quota.write_text("250000 100000\n")
    assert read_quota(quota) == 3  # 2.5 CPUs: rounded up
    quota.write_text("max 100000\n")
    assert read_quota(quota) is None


def test_a_rank_with_no_share_takes_the_others_winner(tmp_path, monkeypatch):
    """Rank 6 of 8 with 4 candidates times none; the winner comes from the gathered timings."""
    from nt_triton import _tuning as tuning
    from nt_triton.tuner._core import Tuner

    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NINETOOTHED_TUNING", "on")
    monkeypatch.setenv("NINETOOTHED_COMPILE_WORKERS", "0")
    configurations = [tuning.Configuration({"B": block}) for block in (64, 16, 256, 32)]

    class Rank6:
        rank, size = 6, 8

        def all_gather(self, value):
            if isinstance(value, list):  # phase A: ranks 0 to 3 timed one candidate each
                assert value == [], "rank 6 has no candidate to time"
                return [[(index, 5.0 - index)] for index in range(4)] + [value] * 4
            if len(value) == 2:  # agreeing: every rank about to tune the same, no entry
                return [value] * self.size
            count, timed, failures, examples = value
            assert timed == [], "rank 6 has no candidate to time"
            others = [(count, [(index, 5.0 - index)], {}, {}) for index in range(count)]
            return others + [value] * (self.size - count)

    class Everything:
        def tiles(self, values):
            return tuning.Tiles((1,), (), 0, 1)

    def no_call():
        raise AssertionError("rank 6 runs nothing")

    tuner = Tuner("k", "k_share", configurations, Everything())
    call = TuningCall(("k",), {}, 4, lambda c: {}, lambda c: no_call, lambda r, n: [1.0] * n)
    tune_together()
    try:
        chosen = tuner.choose(("k",), "gpu", lambda: call, lambda: Rank6())
    finally:
        together._SWITCH[0] = None
    assert chosen.values == {"B": 32}  # index 3, the fastest the other ranks timed


def test_ranks_deal_the_candidates_heaviest_first(tmp_path, monkeypatch):
    """Rank 0 of 2 gets the heaviest, the third heaviest, ...: each rank's share weighs
    alike (every second one of the space's order would give rank 0 every heavy one)."""
    from nt_triton import _tuning as tuning
    from nt_triton.tuner._core import Tuner

    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NINETOOTHED_TUNING", "on")
    monkeypatch.setenv("NINETOOTHED_COMPILE_WORKERS", "0")
    blocks = (256, 64, 128, 16, 32, 8)  # every second one: 256, 128, 32 (the heavy half)
    configurations = [tuning.Configuration({"B": block}) for block in blocks]

    class Rank0:
        rank, size = 0, 2

        def all_gather(self, value):
            if isinstance(value, list):  # phase A
                return [value, []]
            if len(value) == 2:  # agreeing
                return [value, value]
            return [value, (value[0], [], {}, {})]  # the gathered phase B

    class ByBlock:
        def tiles(self, values):
            return tuning.Tiles((values["B"],), (), values["B"], 1)

    loaded: list[int] = []

    def launch(configuration):
        loaded.append(configuration.values["B"])
        return lambda: None

    def timer(run, count):
        return [1.0] * count

    tuner = Tuner("k", "k_deal", configurations, ByBlock())
    call = TuningCall(("k",), {}, 4, lambda c: {}, launch, timer, in_process=True)
    tune_together()
    try:
        tuner.choose(("k",), "gpu", lambda: call, lambda: Rank0())
    finally:
        together._SWITCH[0] = None
    assert sorted(loaded) == [16, 64, 256]  # of 256, 128, 64, 32, 16, 8
