"""The on-disk cache of generated sources, keyed by content hash.

Triton compiles a kernel from its source file, and users read that file when
they debug, so every generated kernel lives in a real file.  The name is the
hash of the content, so identical kernels share a file; writes go through a
temporary file and an atomic rename, so concurrent processes never see a
half-written file; a file whose content does not match its name (corrupted,
or written by something else) is rewritten.  Files get the permissions the
umask allows (a cache directory can be shared), and what runs is always the
source that was generated: :func:`load` checks the file against its name and
hands Python's line cache the same text, which Triton's interpreter reads
when it first runs a kernel.

Where: :func:`nt_triton.knobs.cache_dir`.  When the default directory cannot
be written (no home directory, a read-only one), sources go to a per-user
temporary directory instead, with a warning; a directory named by
``NINETOOTHED_CACHE_DIR`` that cannot be written is an error naming it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import inspect
import linecache
import os
import secrets
import stat
import tempfile
import threading
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from ninetoothed.errors import CodegenError
from nt_triton import knobs
from nt_triton._codegen import naming

HASH_LENGTH = 32
"""Hex digits of the content hash in a cached file's name (``stem_HASH.py``)."""


def content_hash(source: str) -> str:
    """The cache key of a source text."""
    return hashlib.sha256(source.encode()).hexdigest()[:HASH_LENGTH]


def directory() -> Path:
    """The cache directory, created if needed: the configured one, or the fallback."""
    try:
        configured = knobs.cache_dir()
        _make_writable_directory(configured)
        return configured
    except (OSError, RuntimeError) as error:  # RuntimeError: no home directory at all
        if knobs.cache_dir_is_configured():
            raise CodegenError(
                f"NINETOOTHED_CACHE_DIR={os.environ['NINETOOTHED_CACHE_DIR']!r} cannot hold "
                f"generated sources ({error}); point NINETOOTHED_CACHE_DIR at a writable "
                "directory"
            ) from error
        return _fallback(str(error))


def store(source: str, stem: str) -> Path:
    """Write ``source`` to the cache (if not already there intact); return its path."""
    cache = directory()
    path = cache / f"{stem}_{content_hash(source)}.py"
    try:
        if path.read_text() == source:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    write_atomically(path, source.encode())
    return path


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


def load(
    path: Path, injected: Mapping[str, Any], source_lines: SourceLines | None = None
) -> ModuleType:
    """Import the module at ``path``, with ``injected`` names defined first.

    The file must still hold what :func:`store` wrote (its content hash is in
    its name): a source edited since is refused rather than run.  The text
    read here is what Python's line cache serves for the file from now on, so
    Triton's interpreter, which reads a kernel's source when it first runs it,
    runs this text too, whatever happens to the file later.  Loaded for the
    interpreter, the module's ``libdevice`` is the interpreter's
    (:mod:`nt_triton._interpreted_libdevice`).  ``source_lines`` records what
    ``inspect.getsourcelines`` says of the module's functions (see :func:`execute`).
    """
    return execute(path, read(path), injected, source_lines)


def read(path: Path) -> str:
    """The text of the cached source at ``path``, refused if changed since :func:`store`."""
    text = path.read_text()
    if not path.stem.endswith("_" + content_hash(text)):
        raise CodegenError(
            f"the cached source {path} was changed after NineToothed wrote it; NineToothed "
            "runs only the sources it generates (delete the file and make the kernel again)"
        )
    return text


def execute(
    path: Path, text: str, injected: Mapping[str, Any], source_lines: SourceLines | None = None
) -> ModuleType:
    """Run ``text`` (read from ``path`` by :func:`read`) as a module; see :func:`load`.

    ``@triton.jit`` asks ``inspect.getsourcelines`` for the kernel's lines,
    which tokenizes the whole function (milliseconds).  ``source_lines``
    maps a function's first line to that answer: missing answers are
    recorded, present ones are given back (they were computed from this same
    text, which :func:`read` checked against its hash).
    """
    filename = str(path)
    # mtime None: linecache.checkcache leaves the entry alone, edits or not.
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    spec = importlib.util.spec_from_file_location(naming.module(path.stem), path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(injected)
    code = compiled(text, filename)
    if source_lines is None:
        exec(code, module.__dict__)  # noqa: S102
    else:
        with _known_source_lines(filename, source_lines):
            exec(code, module.__dict__)  # noqa: S102
    if naming.LIBDEVICE in module.__dict__ and knobs.interpreting():
        from nt_triton._interpreted_libdevice import LIBDEVICE

        module.__dict__[naming.LIBDEVICE] = LIBDEVICE
    return module


SourceLines = dict[int, tuple[list[str], int]]
"""``inspect.getsourcelines`` of a module's functions, by their first line."""

_PATCHING = threading.Lock()


@contextlib.contextmanager
def _known_source_lines(filename: str, known: SourceLines) -> Iterator[None]:
    """``inspect.getsourcelines`` answering from (and recording into) ``known`` for
    functions of ``filename``; other objects get the real answer."""
    original = inspect.getsourcelines

    def getsourcelines(obj: Any) -> tuple[list[str], int]:
        code = getattr(obj, "__code__", None)
        if not isinstance(code, CodeType) or code.co_filename != filename:
            return original(obj)
        found = known.get(code.co_firstlineno)
        if found is None:
            found = known[code.co_firstlineno] = original(obj)
        return list(found[0]), found[1]

    with _PATCHING:
        inspect.getsourcelines = getsourcelines  # type: ignore[assignment]
        try:
            yield
        finally:
            inspect.getsourcelines = original


_COMPILED: dict[tuple[str, str], CodeType] = {}
"""Code objects of generated sources (kernel modules, host functions) by file name and text."""


def compiled(text: str, filename: str, code: CodeType | None = None) -> CodeType:
    """``compile(text, filename, "exec")``, once per process (``code``: compiled before)."""
    key = (filename, text)
    found = _COMPILED.get(key)
    if found is None:
        if code is None or code.co_filename != filename:
            code = compile(text, filename, "exec")
        found = _COMPILED[key] = code
    return found


def _make_writable_directory(path: Path) -> None:
    """Create ``path`` if needed; raise :class:`OSError` unless files can be written there."""
    path.mkdir(parents=True, exist_ok=True)
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(f"{path} is not writable")


def _fallback(reason: str) -> Path:
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
    _warn_fallback(reason, str(path))
    return path


@functools.cache
def _warn_fallback(reason: str, path: str) -> None:
    warnings.warn(
        f"NineToothed cannot write its cache directory ({reason}); generated sources go to "
        f"{path} instead (set NINETOOTHED_CACHE_DIR to choose)",
        RuntimeWarning,
        stacklevel=4,
    )
