"""Scratch memory for launches of kernels that make tensor descriptors: taken on the
launch's stream and freed there, the caller's own allocator respected, Triton's
allocator variable left as it was (a stand-in CUDA driver records the calls)."""

from __future__ import annotations

import pytest
from triton.runtime import _allocation

from nt_triton._launch import scratch


class FakeDriver:
    """``cuMemAllocAsync`` / ``cuMemFreeAsync`` that record what they were asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []
        self.next = 0x10000

    def cuMemAllocAsync(self, pointer, size, stream):  # noqa: N802 (the driver's name)
        pointer._obj.value = self.next
        self.calls.append(("alloc", self.next, stream))
        self.next += 0x1000
        return 0

    def cuMemFreeAsync(self, pointer, stream):  # noqa: N802
        self.calls.append(("free", pointer.value, stream))
        return 0


@pytest.fixture
def driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(scratch, "_driver", lambda: fake)
    return fake


def launch_asking(size: int):
    """A launch that asks the current allocator for ``size`` bytes, as Triton's does."""
    given = []

    def launch(stream, *arguments):
        buffer = _allocation._allocator.get()(size, 128, stream)
        given.append((buffer.data_ptr(), int(buffer), arguments))

    return launch, given


def test_scratch_is_taken_and_freed_on_the_launch_stream(driver) -> None:
    launch, given = launch_asking(384 * 132)
    scratch.provided(launch)(7, "a", 1)
    assert driver.calls == [("alloc", 0x10000, 7), ("free", 0x10000, 7)]
    assert given == [(0x10000, 0x10000, ("a", 1))]  # an int too (graph captures)
    assert _allocation._allocator.get() is _allocation._NULL_ALLOCATOR


def test_scratch_is_freed_when_the_launch_fails(driver) -> None:
    def failing(stream):
        _allocation._allocator.get()(128, 128, stream)
        raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError, match="launch failed"):
        scratch.provided(failing)(3)
    assert [call[0] for call in driver.calls] == ["alloc", "free"]
    assert _allocation._allocator.get() is _allocation._NULL_ALLOCATOR


def test_the_callers_allocator_is_used_where_set(driver) -> None:
    asked = []

    def own(size, alignment, stream):
        asked.append(size)
        return scratch._Buffer(0x99)

    token = _allocation._allocator.set(own)
    try:
        launch, given = launch_asking(256)
        scratch.provided(launch)(0)
    finally:
        _allocation._allocator.reset(token)
    assert asked == [256] and driver.calls == [] and given[0][0] == 0x99


def test_a_failed_allocation_names_the_call(monkeypatch) -> None:
    class Failing(FakeDriver):
        def cuMemAllocAsync(self, pointer, size, stream):  # noqa: N802
            return 2  # CUDA_ERROR_OUT_OF_MEMORY

        def cuGetErrorName(self, result, name):  # noqa: N802
            name._obj.value = b"CUDA_ERROR_OUT_OF_MEMORY"
            return 0

    monkeypatch.setattr(scratch, "_driver", Failing)
    launch, _ = launch_asking(1 << 40)
    with pytest.raises(RuntimeError, match="cuMemAllocAsync .*CUDA_ERROR_OUT_OF_MEMORY"):
        scratch.provided(launch)(0)
