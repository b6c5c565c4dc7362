"""Kernels found by source file: the newest one alive, when several share a file."""

from __future__ import annotations

import gc

import pytest

from nt_triton._newest_alive import NewestAlive


class Kernel:
    """A stand-in for a kernel object (anything weakly referable)."""


def test_an_older_kernel_serves_when_the_newer_one_sharing_its_file_is_freed():
    found: NewestAlive[Kernel] = NewestAlive()
    older, newer = Kernel(), Kernel()
    found["add.py"] = older
    found["add.py"] = newer
    assert found["add.py"] is newer
    del newer
    gc.collect()
    assert found["add.py"] is older  # a WeakValueDictionary would have lost it
    assert "add.py" in found and len(found) == 1 and dict(found) == {"add.py": older}


def test_nothing_is_kept_alive_and_a_freed_file_is_gone():
    found: NewestAlive[Kernel] = NewestAlive()
    found["add.py"] = Kernel()
    gc.collect()
    assert "add.py" not in found and len(found) == 0 and found.get("add.py") is None
    with pytest.raises(KeyError):
        found["add.py"]
    with pytest.raises(KeyError):
        del found["add.py"]


def test_storing_again_moves_a_kernel_to_the_front_and_delete_forgets_all():
    found: NewestAlive[Kernel] = NewestAlive()
    first, second = Kernel(), Kernel()
    found["mm.py"] = first
    found["mm.py"] = second
    found["mm.py"] = first
    assert found["mm.py"] is first
    found.update({"add.py": second})
    assert set(found) == {"mm.py", "add.py"}
    del found["mm.py"]
    assert "mm.py" not in found and found["add.py"] is second
