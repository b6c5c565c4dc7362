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

Where: the cache's root itself (:func:`nt_triton.cache._layout.root`), as
``<stem>_<content hash>.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import linecache
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from ninetoothed.errors import CodegenError
from nt_triton import knobs
from nt_triton._codegen import naming
from nt_triton.cache import _layout, _locks, _memos

__all__ = [
    "HASH_LENGTH",
    "SourceLines",
    "compiled",
    "content_hash",
    "execute",
    "load",
    "read",
    "store",
]

HASH_LENGTH = 32
"""Hex digits of the content hash in a cached file's name (``stem_HASH.py``)."""


def content_hash(source: str) -> str:
    """The cache key of a source text."""
    return hashlib.sha256(source.encode()).hexdigest()[:HASH_LENGTH]


def store(source: str, stem: str) -> Path:
    """Write ``source`` to the cache (if not already there intact); return its path.

    Processes storing the same source at once write it once (the others wait
    for the lock, then find it); a read-only root keeps the sources it has and
    new ones go to :func:`nt_triton.cache._layout.spill`.
    """
    name = f"{stem}_{content_hash(source)}.py"
    path = _layout.directory("sources") / name
    if _intact(path, source):
        return path
    if not _layout.writable(path.parent):
        path = _layout.spill() / name
        if _intact(path, source):
            return path
    with _locks.held("source", str(path)):
        if not _intact(path, source):  # another process may have written it meanwhile
            _write(path, source)
    return path


def _intact(path: Path, source: str) -> bool:
    """Whether the file at ``path`` holds exactly ``source``."""
    try:
        return _layout.read_file(path) == source.encode()
    except OSError:
        return False  # missing, unreadable, or no file at all: written (a FIFO is replaced)


def _write(path: Path, source: str) -> None:
    try:
        _layout.write_atomically(path, source.encode())
    except OSError as error:
        # A rename cannot replace a directory: say so rather than quote the rename.
        cause = "a directory is in its place" if path.is_dir() else error
        raise CodegenError(
            f"cannot write the generated source {path}: {cause}; remove what is there, or set "
            "NINETOOTHED_CACHE_DIR to another directory"
        ) from error


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
    (:mod:`nt_triton._interpreted_libdevice`), and its kernels' ``min``, ``max`` and
    boolean operators mean what Triton's compiler makes of them
    (:mod:`nt_triton._interpreted_semantics`).  ``source_lines`` records what
    ``inspect.getsourcelines`` says of the module's functions (see :func:`execute`).
    """
    return execute(path, read(path), injected, source_lines)


def read(path: Path) -> str:
    """The text of the cached source at ``path``, refused if changed since :func:`store`."""
    text = _layout.read_file(path).decode()
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
    if knobs.interpreting():
        from nt_triton import _interpreted_semantics

        _interpreted_semantics.install(module, filename)
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


_COMPILED: dict[tuple[str, str], CodeType] = _memos.register(
    {}, "nt_triton.cache._sources._COMPILED", "sources"
)
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
