"""The source cache: content-addressed, atomic, self-healing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nt_triton import knobs
from nt_triton.cache import _layout, _tables
from nt_triton.cache import _sources as cache


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


def test_unwritable_default_falls_back_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.delenv("NINETOOTHED_CACHE_DIR", raising=False)
    # A cache home below a regular file cannot be created, even by root.
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    _layout._warn_fallback.cache_clear()
    with pytest.warns(RuntimeWarning, match="NINETOOTHED_CACHE_DIR"):
        path = cache.store("VALUE = 1\n", "kernel")
    assert path.parent.name.startswith("ninetoothed-")
    assert cache.load(path, {}).VALUE == 1
    # Every kind follows the root there: the tuning tables too.
    assert _tables.directory() == path.parent / "tuning"


def test_unwritable_configured_directory_is_an_error_naming_the_knob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninetoothed.errors import CodegenError

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(CodegenError, match="NINETOOTHED_CACHE_DIR=.*a-file/cache"):
        cache.store("VALUE = 1\n", "kernel")


def test_tilde_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", "~/nt-cache")
    assert cache.store("VALUE = 1\n", "kernel").parent == tmp_path / "nt-cache"
    monkeypatch.delenv("NINETOOTHED_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "~/xdg")
    assert knobs.cache_dir() == tmp_path / "xdg" / "ninetoothed"


def test_files_get_the_umask_permissions(cache_dir: Path) -> None:
    import os

    previous = os.umask(0o022)
    try:
        path = cache.store("VALUE = 3\n", "kernel")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o644


def test_an_edited_source_is_refused_at_load(cache_dir: Path) -> None:
    from ninetoothed.errors import CodegenError

    path = cache.store("VALUE = 1\n", "kernel")
    path.write_text("VALUE = 2\n")
    with pytest.raises(CodegenError, match="changed after NineToothed wrote it"):
        cache.load(path, {})


@pytest.mark.interpreter_only
def test_the_interpreter_runs_the_generated_source_after_an_edit(cache_dir: Path) -> None:
    import torch

    import ninetoothed
    from ninetoothed import Tensor

    def application(x, y):
        y = x + 1  # noqa: F841

    kernel = ninetoothed.make(
        lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1))
    )
    path = Path(kernel.source_path)
    # Edited between make and the first call (the interpreter reads source lazily).
    path.write_text(path.read_text().replace("+ 1", "+ 100"))
    x = torch.arange(8, dtype=torch.float32)
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    torch.testing.assert_close(y, x + 1)
