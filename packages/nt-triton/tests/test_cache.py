"""The source cache: content-addressed, atomic, self-healing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nt_triton import cache, knobs


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_store_is_content_addressed(cache_dir: Path) -> None:
    first = cache.store("VALUE = 1\n", "kernel")
    assert first.parent == cache_dir == knobs.cache_dir()
    assert first.read_text() == "VALUE = 1\n"
    assert cache.store("VALUE = 1\n", "kernel") == first
    assert cache.store("VALUE = 2\n", "kernel") != first


def test_corrupted_entry_is_rebuilt(cache_dir: Path) -> None:
    path = cache.store("VALUE = 1\n", "kernel")
    path.write_text("garbage that is not the source")
    assert cache.store("VALUE = 1\n", "kernel") == path
    assert path.read_text() == "VALUE = 1\n"
    assert cache.load(path, {}).VALUE == 1


def test_no_temporary_files_left(cache_dir: Path) -> None:
    cache.store("VALUE = 1\n", "kernel")
    assert not list(cache_dir.glob("*.tmp"))


def test_load_injects_names(cache_dir: Path) -> None:
    path = cache.store("RESULT = helper() + 1\n", "kernel")
    assert cache.load(path, {"helper": lambda: 41}).RESULT == 42


def test_kernel_source_lives_in_the_cache(cache_dir: Path) -> None:
    import ninetoothed
    from ninetoothed import Tensor

    def application(x, y):
        y = x  # noqa: F841

    kernel = ninetoothed.make(
        lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1))
    )
    path = Path(kernel.source_path)
    assert path.parent == cache_dir
    assert path.read_text() == kernel.source
