"""The cache's kinds: one root, sized and cleared per kind, its memos forgotten with them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ninetoothed
from ninetoothed import Tensor
from nt_triton import cache
from nt_triton._kernel import LOADED
from nt_triton.cache import _reuse, _sources, _tables


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root, with Triton's cache in a folder of its own."""
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    _reuse.forget()
    return tmp_path / "root"


def make_kernel() -> ninetoothed.Kernel:
    def application(x, y):
        y = x * 3  # noqa: F841

    return ninetoothed.make(
        lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1))
    )


def sizes(kinds: list[cache.Usage]) -> dict[str, tuple[int, int]]:
    return {usage.kind: (usage.files, usage.bytes) for usage in kinds}


def files_of(folder: Path, suffix: str) -> tuple[int, int]:
    found = [path for path in folder.iterdir() if path.name.endswith(suffix)]
    return len(found), sum(path.stat().st_size for path in found)


def test_one_root_holds_every_kind_and_info_sizes_each(root: Path) -> None:
    kernel = make_kernel()
    _tables.write(Path(kernel.source_path).stem, "key", {"configuration": {}})
    (root / "notes.py").write_text("mine, not the cache's\n")  # a user's file in the root
    assert cache.root() == root
    usages = {usage.kind: usage for usage in cache.info()}
    assert list(usages) == ["sources", "index", "tuning", "triton"]
    assert usages["sources"].path == root == Path(kernel.source_path).parent
    assert (usages["sources"].files, usages["sources"].bytes) == (1, len(kernel.source.encode()))
    assert usages["index"].path == root / "index"
    assert (usages["index"].files, usages["index"].bytes) == files_of(root / "index", ".pickle")
    assert usages["index"].files == 1
    assert usages["tuning"].path == root / "tuning"
    assert (usages["tuning"].files, usages["tuning"].bytes) == files_of(root / "tuning", ".json")
    assert usages["tuning"].files == 1


def test_clear_one_kind_leaves_the_others_and_foreign_files(root: Path) -> None:
    kernel = make_kernel()
    _tables.write(Path(kernel.source_path).stem, "key", {"configuration": {}})
    (root / "notes.py").write_text("mine\n")
    (root / "tuning" / "README").write_text("mine\n")
    before = sizes(cache.info())
    removed = cache.clear(["tuning"])
    assert sizes(removed) == {"tuning": before["tuning"]}
    after = sizes(cache.info())
    assert after["tuning"] == (0, 0)
    assert after["sources"] == before["sources"] and after["index"] == before["index"]
    assert sizes(cache.clear()) == {"sources": before["sources"], "index": before["index"],
                                    "tuning": (0, 0)}  # fmt: skip
    assert {kind: size for kind, size in sizes(cache.info()).items() if kind != "triton"} == {
        "sources": (0, 0), "index": (0, 0), "tuning": (0, 0)
    }  # fmt: skip
    assert (root / "notes.py").exists() and (root / "tuning" / "README").exists()


def test_interrupted_writes_count_with_their_kind(root: Path) -> None:
    kernel = make_kernel()
    leftover = root / f".{Path(kernel.source_path).name}.{os.getpid()}.0a1b2c3d.tmp"
    leftover.write_text("half a file")
    assert sizes(cache.info(["sources"])) == {"sources": (2, len(kernel.source) + 11)}
    cache.clear(["sources"])
    assert not leftover.exists()


def test_clearing_a_kind_forgets_this_processs_memo_of_it(root: Path) -> None:
    kernel = make_kernel()
    assert _reuse._MEMO and _sources._COMPILED
    memos = {memo.name: memo for memo in cache.memos()}
    assert memos["nt_triton.cache._reuse._MEMO"].entries == len(_reuse._MEMO)
    cache.clear(["tuning"])
    assert _reuse._MEMO
    cache.clear(["index"])
    assert not _reuse._MEMO and _sources._COMPILED
    cache.clear(["sources"])
    assert not _sources._COMPILED
    # The kernels made in this process stay found: launches name them by their file.
    assert LOADED[kernel.source_path] is kernel.generated


def test_a_cleared_cache_is_filled_again(root: Path) -> None:
    import torch

    make_kernel()
    cache.clear()
    kernel = make_kernel()
    assert Path(kernel.source_path).exists()
    device = "cuda" if os.environ.get("NT_TEST_GPU") == "1" else "cpu"
    x = torch.arange(8, dtype=torch.float32, device=device)
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    torch.testing.assert_close(y, x * 3)


def test_compiled_binaries_are_tritons_reported_and_never_cleared(root: Path) -> None:
    triton = root.parent / "triton"
    (triton / "ABC").mkdir(parents=True)
    (triton / "ABC" / "kernel.cubin").write_bytes(b"\0" * 100)
    (triton / "ABC" / "kernel.json").write_text("{}")
    assert cache.triton_directory() == triton
    assert sizes(cache.info(["triton"])) == {"triton": (2, 102)}
    cache.clear()
    assert sizes(cache.info(["triton"])) == {"triton": (2, 102)}
    with pytest.raises(ValueError, match="'triton'.*Triton's own cache is Triton's to clear"):
        cache.clear(["triton"])


def test_an_unknown_kind_is_named(root: Path) -> None:
    with pytest.raises(ValueError, match=r"cache kind 'binaries': expected one of sources, index"):
        cache.info(["binaries"])


def test_an_unwritable_configured_root_keeps_tuning_results_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(blocker / "cache"))
    _tables.write("kernel_0", "key", {"configuration": {}})  # no error, nothing written
    assert _tables.read("kernel_0") == {}
