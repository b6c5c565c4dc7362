"""One cache directory shared by many processes at once (``nt_triton.cache``).

Eight processes released together make and call the same kernels: each
source and index entry is generated and written once (the others wait on its
lock, then find it), each binary compiled once, and a reader never sees half
a file.  A pre-populated cache on a read-only mount (a container image) is
used without a write; a file system without ``flock`` still gives every
process the right kernels.  The processes are :mod:`support.shared_cache`;
on the CPU kernels run under the interpreter (binaries are compiled for
sm_90, which needs no GPU), and the GPU run repeats the eight processes on
the GPUs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from support.base import ON_GPU
from support.processes import environment, run_processes

import ninetoothed
from ninetoothed import Tensor
from nt_triton.cache import _layout, _locks, _tables
from nt_triton.cache import _sources as sources

COUNT = 8
CHILD = "support.shared_cache"


def shared(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Every process's cache settings: one NineToothed cache, one Triton cache."""
    return {
        "NINETOOTHED_CACHE_DIR": str(tmp_path / "cache"),
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
        "TMPDIR": str(tmp_path),  # where a read-only cache's new sources would go
        "NINETOOTHED_MAX_NUM_CONFIGS": "1",  # one configuration: compiled in the process
        "NINETOOTHED_GPU_CHECK": "0",
        **extra,
    }


def files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time."""
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file()
    }


def check_each_made_once(answers: list[dict[str, Any]], cache: Path) -> None:
    generated = Counter(name for answer in answers for name in answer["generated"])
    assert len(generated) == 2 and set(generated.values()) == {1}, generated
    written = Counter(path for answer in answers for path in answer["written"])
    assert set(written.values()) == {1}, f"written more than once: {written}"
    on_disk = {str(p) for p in cache.glob("*.py")} | {str(p) for p in cache.glob("index/*")}
    assert set(written) == on_disk
    assert len({answer["source"] for answer in answers}) == 1


@pytest.mark.interpreter_only
def test_eight_processes_generate_and_write_each_kernel_once(tmp_path: Path) -> None:
    answers = run_processes(CHILD, COUNT, tmp_path / "barrier", ["make"], extra=shared(tmp_path))
    check_each_made_once(answers, tmp_path / "cache")


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU (the GPU run: NT_TEST_GPU=1)")
def test_eight_processes_on_the_gpus_make_and_compile_each_kernel_once(tmp_path: Path) -> None:
    answers = run_processes(CHILD, COUNT, tmp_path / "barrier", ["make"], extra=shared(tmp_path))
    check_each_made_once(answers, tmp_path / "cache")
    compiled = Counter(digest for answer in answers for digest in answer["compiled"])
    assert compiled and set(compiled.values()) == {1}, f"binaries compiled again: {compiled}"


@pytest.mark.interpreter_only
def test_eight_processes_compile_each_binary_once(tmp_path: Path) -> None:
    # Compiled for the GPU, not interpreted (sm_90 needs no GPU to compile for).
    extra = shared(tmp_path, TRITON_INTERPRET="0")
    answers = run_processes(CHILD, COUNT, tmp_path / "barrier", ["compile"], extra=extra)
    compiled = Counter(digest for answer in answers for digest in answer["compiled"])
    assert list(compiled.values()) == [1], f"Triton compiled {compiled}"
    assert {answer["hash"] for answer in answers} == set(compiled)


def test_readers_never_see_half_a_table_and_no_writer_loses_an_entry(tmp_path: Path) -> None:
    answers = run_processes(CHILD, COUNT, tmp_path / "barrier", ["tables"], extra=shared(tmp_path))
    assert sum(answer["reads"] for answer in answers) > 0, "the readers read nothing"
    table = json.loads((tmp_path / "cache" / "tuning" / "shared_0.json").read_text())
    entries = table["entries"]
    assert len(entries) == (COUNT // 2) * 25, f"entries lost: {len(entries)} of {COUNT // 2 * 25}"


@pytest.mark.interpreter_only
def test_without_flock_every_process_still_gets_whole_kernels(tmp_path: Path) -> None:
    extra = shared(tmp_path, NT_NO_FLOCK="1")
    answers = run_processes(CHILD, 4, tmp_path / "barrier", ["make"], extra=extra)
    cache = tmp_path / "cache"
    assert len(answers) == 4  # each checked its kernels' results
    assert len({answer["source"] for answer in answers}) == 1
    for path in cache.glob("*.py"):  # every source whole: its content matches its name
        sources.read(path)
    assert len(list(cache.glob("index/*.pickle"))) == 2
    assert not list(cache.rglob("*.tmp")), "a temporary file was left behind"


def test_a_refused_flock_warns_once_and_the_work_goes_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import fcntl

    def refused(descriptor: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fcntl, "flock", refused)
    _locks._warn_unlocked.cache_clear()
    with pytest.warns(RuntimeWarning, match="cannot be locked .*No locks available"):
        with _locks.held("source", "a") as locked:
            assert locked is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: the second lock is silent
        path = sources.store("VALUE = 3\n", "unlocked")
    assert sources.load(path, {}).VALUE == 3


def test_a_lock_is_exclusive_between_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While this process holds a lock, another process cannot take it."""
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    probe = (
        "import fcntl, os, sys\n"
        "from nt_triton.cache import _locks\n"
        "descriptor = os.open(_locks.path('binary', 'k'), os.O_RDWR)\n"
        "try:\n"
        "    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n"
        "    sys.exit(3)\n"
    )
    with _locks.held("binary", "k") as locked:
        assert locked
        taken = subprocess.run([sys.executable, "-c", probe], env=environment(), check=False)
        assert taken.returncode == 3, "another process took a held lock"
    free = subprocess.run([sys.executable, "-c", probe], env=environment(), check=False)
    assert free.returncode == 0


def read_only(cache: Path) -> list[str]:
    """A command prefix under which ``cache`` is read-only even to root (a read-only
    bind mount in a mount namespace); as another user, the folders lose their write bits."""
    if os.geteuid() != 0:
        for folder in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
            folder.chmod(0o555)
        return []
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--mount", "true"]).returncode != 0:
        pytest.skip("root here, and no mount namespace to make a read-only mount in")
    return [unshare, "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(cache)]


@pytest.mark.interpreter_only
def test_a_prepopulated_read_only_cache_is_used_without_writes(tmp_path: Path) -> None:
    extra = shared(tmp_path)
    run_processes(CHILD, 1, tmp_path / "populate", ["make"], extra=extra)
    cache = tmp_path / "cache"
    before = files(cache)
    prefix = read_only(cache)
    try:
        answers = run_processes(
            CHILD, 2, tmp_path / "barrier", ["make"], extra=extra, prefix=prefix
        )
    finally:
        for folder in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
            folder.chmod(0o755)
    assert files(cache) == before, "the read-only cache was written"
    for answer in answers:
        assert answer["generated"] == [] and answer["written"] == [], answer
    assert not list(tmp_path.glob("ninetoothed-*")), "a source was spilled: the cache had it"


def test_a_new_kernel_in_a_read_only_cache_goes_to_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(cache))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real = _layout.writable
    monkeypatch.setattr(_layout, "writable", lambda path: real(path) and cache not in path.parents
                        and path != cache)  # fmt: skip
    _layout._warn_fallback.cache_clear()
    from support.shared_cache import application, arrangement

    with pytest.warns(RuntimeWarning, match="is read-only.* is read as it is; new sources go to"):
        kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)),
                                  max_num_configs=1)  # fmt: skip
    assert Path(kernel.generated.source_path).parent == tmp_path / f"ninetoothed-{os.getuid()}"
    device = "cuda" if ON_GPU else "cpu"
    x, y = torch.randn(300, device=device), torch.randn(300, device=device)
    z = torch.full_like(x, float("nan"))
    kernel(x, y, z, BLOCK_SIZE=64)
    torch.testing.assert_close(z, x + y)
    assert files(cache) == {}, "the read-only cache was written"
    _tables.write("some_0", "key", {"configuration": {}})
    assert files(cache) == {}, "a tuning result was written to the read-only cache"
    with pytest.raises(PermissionError, match="cannot be written: no tuning results imported"):
        table = tmp_path / "table.json"
        table.write_text('{"format": 1, "kernels": {}}')
        _tables.import_table(table)
