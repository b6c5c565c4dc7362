"""The tuner's timer measures each run with a cold L2 cache, as the benchmarks do."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from nt_torch import fastpath


class _Recorder:
    """Stands for CUDA events and the flush buffer, logging what is done to them."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def record(self) -> None:
        self.log.append(f"{self.name}.record")

    def zero_(self) -> None:
        self.log.append("flush")

    def elapsed_time(self, end: _Recorder) -> float:
        return 1.0


def test_every_timed_run_follows_an_l2_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    kinds = iter(["start"] * 3 + ["end"] * 3)

    def event(enable_timing: bool) -> Any:
        assert enable_timing
        return _Recorder(log, next(kinds))

    monkeypatch.setattr(torch.cuda, "Event", event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("synchronize"))
    monkeypatch.setattr(fastpath, "flush_buffer", lambda: _Recorder(log, "buffer"))
    times = fastpath.time_runs(lambda: log.append("run"), 3)
    assert times == [1.0, 1.0, 1.0]
    one = ["flush", "start.record", "run", "end.record"]
    assert log == one * 3 + ["synchronize"]


def test_the_flush_buffer_outgrows_the_l2_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real_empty = torch.empty

    class Properties:
        L2_cache_size = 200 << 20

    def empty(size: int, dtype: torch.dtype, device: str) -> torch.Tensor:
        sizes.append(size)
        assert (dtype, device) == (torch.int8, "cuda")
        return real_empty(0, dtype=dtype)

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda: Properties())
    monkeypatch.setattr(torch, "empty", empty)
    fastpath.flush_buffer()
    Properties.L2_cache_size = 50 << 20  # an H100's: the 256 MiB floor wins
    fastpath.flush_buffer()
    assert sizes == [400 << 20, 256 << 20]
