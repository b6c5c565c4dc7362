"""Something other than a file where the cache keeps one: a directory, a FIFO.

A FIFO where a generated source, an index entry or a tuning table belongs
made the call block forever (opening a FIFO to read waits for a writer); a
directory there raised ``IsADirectoryError``.  Each is now an unusable entry:
a FIFO is never opened to be read, and is replaced by the file; a directory,
which cannot be replaced, is a miss for an index entry or a tuning table and
a clear error naming it for a source (the kernel cannot be written).  Every
make runs on a thread with a deadline, so a regression fails instead of
hanging the suite.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import ninetoothed
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import CodegenError
from ninetoothed.spec.fingerprint import spec_fingerprint
from nt_triton.cache import _reuse as index
from nt_triton.cache import _tables

DEVICE = "cuda" if os.environ.get("NT_TEST_GPU") == "1" else "cpu"
BLOCK = Symbol("BLOCK", meta=True)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    index.forget()
    yield tmp_path
    index.forget()


def arrangement(x, y, BLOCK=BLOCK):
    return x.tile((BLOCK,)), y.tile((BLOCK,))


def tripled(x, y):
    y = x * 3  # noqa: F841


def make() -> ninetoothed.Kernel:
    return ninetoothed.make(arrangement, tripled, (Tensor(1), Tensor(1)))


def put(thing: str, path: Path) -> None:
    """A ``thing`` (a non-empty directory, or a FIFO) at ``path``, in place of a file."""
    path.unlink(missing_ok=True)
    if thing == "directory":
        path.mkdir()
        (path / "kept").write_text("not NineToothed's")
    else:
        os.mkfifo(path)


def within_seconds(function: Callable[[], Any], path: Path, seconds: float = 30) -> Any:
    """``function()`` on a thread; fails if it has not returned in time (a read waiting
    on the FIFO at ``path``, which is then opened for writing to let it go)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("value", function()))
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(("error", error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # the blocked reader sees EOF
        thread.join(seconds)
        pytest.fail(f"blocked on {path}")
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def check(kernel: ninetoothed.Kernel) -> None:
    x = torch.randn(37, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    kernel(x, y, BLOCK=8)
    torch.testing.assert_close(y, x * 3)


def paths(kernel: ninetoothed.Kernel, cache_dir: Path) -> tuple[Path, Path]:
    """The kernel's source file and index entry."""
    key = spec_fingerprint(kernel.spec, index.context())
    return Path(kernel.source_path), cache_dir / "index" / f"{key}.pickle"


def test_a_fifo_where_a_source_belongs_is_replaced(cache_dir: Path) -> None:
    source, entry = paths(make(), cache_dir)
    index.forget()
    entry.unlink()
    put("fifo", source)
    check(within_seconds(make, source))
    assert source.is_file()


def test_a_directory_where_a_source_belongs_is_named(cache_dir: Path) -> None:
    source, entry = paths(make(), cache_dir)
    index.forget()
    entry.unlink()
    put("directory", source)
    with pytest.raises(CodegenError, match=rf"{source}: a directory is in its place"):
        within_seconds(make, source)


@pytest.mark.parametrize("thing", ["directory", "fifo"])
def test_something_else_where_an_index_entry_belongs_is_a_miss(cache_dir: Path, thing: str) -> None:
    _, entry = paths(make(), cache_dir)
    index.forget()
    put(thing, entry)
    check(within_seconds(make, entry))
    assert entry.is_file() == (thing == "fifo")  # a FIFO is replaced, a directory stays


@pytest.mark.parametrize("thing", ["directory", "fifo"])
def test_something_else_where_a_tuning_table_belongs_is_empty(cache_dir: Path, thing: str) -> None:
    table = _tables.directory() / "kernel_0.json"
    table.parent.mkdir(parents=True)
    put(thing, table)
    assert within_seconds(lambda: _tables.read("kernel_0"), table) == {}
    _tables.write("kernel_0", "key", {"milliseconds": 1.0})
    expected = {"key": {"milliseconds": 1.0}} if thing == "fifo" else {}
    assert within_seconds(lambda: _tables.read("kernel_0"), table) == expected
