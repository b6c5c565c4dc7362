"""Locks shared by processes: one process generates a file, the others wait and read it.

Many processes making the same kernels with one cache directory at once (the
ranks of a job, a server's workers, a test run's workers) would each generate
every source, index entry and binary they miss: correct, since every file is
written through an atomic rename, but N times the work.  :func:`held` takes
an exclusive ``flock`` on ``<root>/locks/<kind>-<hash>.lock``: the first
process does the work, the others block until it is done and then find it
done (each checks again once it holds the lock).

Where no lock can be taken, the work goes ahead unlocked: it may then be done
more than once, never half.  That is the case in a read-only cache (where
nothing is written anyway), on a file system without ``flock`` (some network
file systems answer ``ENOLCK``; a warning says so once per process), and on
platforms without ``fcntl``.  A lock is never held while waiting for another
process in any other way (tuning's collectives take none), so two processes
cannot wait for each other.

The lock files are empty and stay (deleting one while it is held would let a
second process take a new one at once); ``ninetoothed cache clear`` leaves them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

from ninetoothed.errors import CodegenError
from nt_triton.cache import _layout

try:
    import fcntl
except ImportError:  # not on this platform: no locks, the work may be done twice
    FLOCK = False
else:
    FLOCK = True
"""Whether this platform has ``flock`` (``fcntl``)."""

__all__ = ["FLOCK", "FOLDER", "held", "path"]

FOLDER = "locks"
"""The locks' folder under the cache's root."""


def path(kind: str, key: str) -> Path:
    """The lock file of ``key`` (any text: it is hashed) among the locks of ``kind``."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return _layout.root() / FOLDER / f"{kind}-{digest}.lock"


@contextlib.contextmanager
def held(kind: str, key: str) -> Iterator[bool]:
    """Hold the lock of ``key`` among the locks of ``kind`` (blocking until it is free);
    yields whether a lock is held (False: none could be taken; the caller's work goes
    ahead unlocked)."""
    descriptor = _open(kind, key)
    if descriptor is None:
        yield False
        return
    try:
        locked = _lock(descriptor)
        try:
            yield locked
        finally:
            if locked:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def _open(kind: str, key: str) -> int | None:
    """The lock file's descriptor, or None where locking is out of the question."""
    if not FLOCK:
        return None
    try:
        lock = path(kind, key)
        if not _layout.writable(lock.parent.parent):
            return None  # a read-only cache: nothing will be written to it
        lock.parent.mkdir(exist_ok=True)
        return os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except (OSError, CodegenError):
        return None  # no root, or the folder cannot be made or the file opened: no lock


def _lock(descriptor: int) -> bool:
    """Take the lock on ``descriptor``; False (with a warning once) where the file system
    refuses ``flock``."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except OSError as error:
        _warn_unlocked(f"{type(error).__name__}: {error}")
        return False
    return True


@functools.cache
def _warn_unlocked(reason: str) -> None:
    warnings.warn(
        f"NineToothed's cache directory {_layout.root()} cannot be locked ({reason}): "
        "processes sharing it may generate a kernel more than once (never half a file)",
        RuntimeWarning,
        stacklevel=5,
    )
