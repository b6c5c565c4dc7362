"""Where the cache lives: its root, one folder per kind, atomic writes.

The root is :func:`nt_triton.knobs.cache_dir` (``NINETOOTHED_CACHE_DIR``,
else ``$XDG_CACHE_HOME/ninetoothed``, else ``~/.cache/ninetoothed``).  When the
default root cannot be created (no home directory, a file in the way), everything
goes to a per-user temporary directory instead, with a warning; a root named
by ``NINETOOTHED_CACHE_DIR`` that cannot be created is an error naming it.  A
root that exists but cannot be written (a cache pre-populated in a container
image, mounted read-only) is used as it is: read, never written (:func:`writable`
says so; new sources go to :func:`spill`, new index entries and tuning results
stay in memory).  Each kind of entry has its place under the root
(:data:`PLACES`); every file is written through a temporary file and an
atomic rename, so concurrent processes never see a half-written one, and
read only if it is a regular file (:func:`read_file`: a FIFO left where an
entry belongs would block the read forever).
"""

from __future__ import annotations

import functools
import os
import secrets
import stat
import tempfile
import warnings
from pathlib import Path

from ninetoothed.errors import CodegenError
from nt_triton import knobs

__all__ = [
    "PLACES",
    "NotAFile",
    "directory",
    "read_file",
    "root",
    "spill",
    "writable",
    "write_atomically",
]

PLACES = {"sources": "", "index": "index", "tuning": "tuning"}
"""Each kind's folder under the root (sources lie in the root itself)."""


def root() -> Path:
    """The cache's root, created if needed: the configured one (perhaps read-only), or
    the fallback."""
    configured = None
    try:
        configured = knobs.cache_dir()
        _make_writable_directory(configured)
        return configured
    except (OSError, RuntimeError) as error:  # RuntimeError: no home directory at all
        if configured is not None and _readable_directory(configured):
            return configured  # read-only and pre-populated: read, never written
        if knobs.cache_dir_is_configured():
            raise CodegenError(
                f"NINETOOTHED_CACHE_DIR={os.environ['NINETOOTHED_CACHE_DIR']!r} cannot hold "
                f"generated sources ({error}); point NINETOOTHED_CACHE_DIR at a writable "
                "directory"
            ) from error
        return _fallback(str(error))


def directory(kind: str, under: Path | None = None) -> Path:
    """The folder of ``kind`` (one of :data:`PLACES`) under ``under`` (default: :func:`root`);
    not created."""
    return (under or root()) / PLACES[kind]


def writable(path: Path) -> bool:
    """Whether files can be created in the folder ``path`` (False for a read-only root)."""
    return os.access(path, os.W_OK | os.X_OK)


def spill() -> Path:
    """Where new files go while the root is read-only: the per-user temporary folder
    (warns once: what the image lacks is generated again in every container)."""
    return _fallback(f"{root()} is read-only", "is read as it is; new sources go to")


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (never half-written)."""
    temporary = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    # os.open with 0o666 lets the umask decide the permissions (mkstemp's are 0600).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


class NotAFile(OSError):
    """Something other than a regular file (a directory, a FIFO …) where the cache keeps one."""

    def __init__(self, path: Path, mode: int) -> None:
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        super().__init__(f"{path} is {kind}, where NineToothed's cache keeps a file")


def read_file(path: Path) -> bytes:
    """The bytes of the regular file at ``path``; :class:`NotAFile` for anything else.

    Opened without blocking, so a FIFO is seen for what it is rather than
    waited on, and checked before a byte is read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(path, mode)
        return file.read()


def _make_writable_directory(path: Path) -> None:
    """Create ``path`` if needed; raise :class:`OSError` unless files can be written there."""
    path.mkdir(parents=True, exist_ok=True)
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(f"{path} is not writable")


def _readable_directory(path: Path) -> bool:
    """Whether ``path`` is a folder whose files can be listed and read."""
    return path.is_dir() and os.access(path, os.R_OK | os.X_OK)


def _fallback(reason: str, doing: str = "cannot be written; generated sources go to") -> Path:
    """The per-user temporary cache directory, created private; warns once per reason."""
    owner = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    path = Path(tempfile.gettempdir()) / f"ninetoothed-{owner}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        status = path.lstat()
    except OSError as error:
        raise CodegenError(
            f"no writable directory for generated sources ({reason}; the fallback {path}: "
            f"{error}); set NINETOOTHED_CACHE_DIR to a writable directory"
        ) from error
    if not stat.S_ISDIR(status.st_mode) or (hasattr(os, "getuid") and status.st_uid != os.getuid()):
        raise CodegenError(
            f"no writable directory for generated sources ({reason}), and the fallback {path} "
            "is not a directory of this user's; set NINETOOTHED_CACHE_DIR to a writable directory"
        )
    _warn_fallback(reason, str(path), doing)
    return path


@functools.cache
def _warn_fallback(reason: str, path: str, doing: str) -> None:
    warnings.warn(
        f"NineToothed's cache directory ({reason}) {doing} "
        f"{path} instead (set NINETOOTHED_CACHE_DIR to choose)",
        RuntimeWarning,
        stacklevel=4,
    )
