"""Generated kernels by fingerprint: ``make`` of a kernel seen before skips code generation.

Code generation, the tuning space, the host code and (under the interpreter)
the GPU front-end check are pure functions of what
:func:`ninetoothed.spec.fingerprint.spec_fingerprint` hashes, plus this backend's
context (:func:`context`: the versions and source files of NineToothed,
nt-triton and Triton, and the knobs code generation reads).  Their products
are kept under that fingerprint twice:

* in this process (:data:`_MEMO`), with the loaded ``@triton.jit`` function,
  so making the same kernel again costs the fingerprint and building the
  kernel object;
* on disk, in the cache's ``index`` folder (``<root>/index/<fingerprint>.pickle``),
  so another process loads the generated module directly.

An index entry names its source file, which is checked against its content
hash when loaded (:func:`nt_triton.cache._sources.read`), and the entry itself
records the fingerprint it was kept under and the hash of the text it was
made with: an entry found under another fingerprint (files swapped or
copied) or naming another source is a miss, like anything else wrong with
an entry (missing, unreadable, from another format), and the kernel is
generated again.  Kernels that call users' ``triton.jit`` helpers are not kept
(the fingerprint refuses them).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import os
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninetoothed.errors import CodegenError
from ninetoothed.spec.fingerprint import spec_fingerprint
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _tuning as tuning
from nt_triton import knobs
from nt_triton._codegen import GeneratedSource
from nt_triton._version import VERSION, VERSIONED_MODULES
from nt_triton.cache import _layout, _memos
from nt_triton.cache import _sources as sources

__all__ = [
    "Entry",
    "FORMAT",
    "Loaded",
    "context",
    "fingerprint",
    "forget",
    "library_stamp",
    "lookup",
    "remember",
]

FORMAT = 2
"""Bumped when :class:`Entry` changes: entries of another format are misses."""

_PACKAGE = Path(__file__).resolve().parent.parent
"""nt-triton's source folder (its files are part of :func:`library_stamp`)."""


@dataclass(frozen=True)
class Entry:
    """What generating a kernel produced, beyond its source file."""

    generated: GeneratedSource
    configurations: tuple[tuning.Configuration, ...]
    host: str
    """The host function's source (:func:`nt_triton._host.host_source`)."""
    file: str
    """The generated source's file name in the ``sources`` folder."""
    gpu_check_pending: bool
    """Under the interpreter: the GPU front-end check waits for a call's constexpr values."""
    code: bytes = b""
    """The compiled kernel module and host function (``marshal``; this Python's)."""
    source_lines: sources.SourceLines = dataclasses.field(default_factory=dict)
    """What ``inspect.getsourcelines`` said of the module's functions (``triton.jit`` asks)."""
    key: str = ""
    """The fingerprint the entry was kept under (set by :func:`remember`)."""
    text_hash: str = ""
    """The content hash of the source text the entry was made with (set by :func:`remember`)."""
    format: int = FORMAT


@dataclass(frozen=True)
class Loaded:
    """An entry with its source text and loaded ``@triton.jit`` function."""

    entry: Entry
    text: str
    function: Any
    path: Path
    """The source file (in the root, or where a read-only root's new sources go)."""


_MEMO: dict[tuple[str, str], Loaded] = _memos.register({}, "nt_triton.cache._reuse._MEMO", "index")
"""This process's entries, by cache root and fingerprint."""


def fingerprint(spec: KernelSpec) -> str | None:
    """The kernel's fingerprint, or None when it cannot be fingerprinted safely."""
    return spec_fingerprint(spec, context(), VERSIONED_MODULES)


def context() -> tuple[Any, ...]:
    """What besides the spec decides the generated kernel: libraries and knobs."""
    return (FORMAT, library_stamp(), knobs.interpreting(), knobs.max_num_configs(),
            knobs.gpu_check(), knobs.split_loops())  # fmt: skip


@functools.cache
def library_stamp() -> str:
    """Versions and source files of the code generator (once per process: what is loaded)."""
    import triton

    import ninetoothed

    digest = hashlib.sha256(f"{sys.version}|{triton.__version__}".encode())
    packages = (
        ("ninetoothed", Path(str(ninetoothed.__file__)).parent,
         getattr(ninetoothed, "__version__", "?")),
        ("nt_triton", _PACKAGE, VERSION),
    )  # fmt: skip
    for package, root, version in packages:
        digest.update(f"|{package} {version}".encode())
        for directory, subdirectories, files in os.walk(root):
            subdirectories.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    status = os.stat(os.path.join(directory, name))
                    digest.update(f"|{name}:{status.st_mtime_ns}:{status.st_size}".encode())
    return digest.hexdigest()[:24]


def lookup(key: str) -> Loaded | None:
    """The kernel generated before under ``key``: this process's, else the disk's, else None."""
    root = _layout.root()
    found = _MEMO.get((str(root), key))
    if found is not None:
        # The file may have been cleared since: put the source back (a no-op when intact).
        path = sources.store(found.text, Path(found.entry.file).stem.rsplit("_", 1)[0])
        return found if path == found.path else dataclasses.replace(found, path=path)
    try:
        data = _layout.read_file(_layout.directory("index", root) / f"{key}.pickle")
        entry = pickle.loads(data)  # noqa: S301 - our own cache, like the sources we run
        if not isinstance(entry, Entry) or entry.format != FORMAT or entry.key != key:
            return None  # another format, or another kernel's entry
        path = _layout.directory("sources", root) / entry.file
        text = sources.read(path)
        if sources.content_hash(text) != entry.text_hash:
            return None  # another kernel's source
        _seed_compiled(entry, text, str(path))
        module = sources.execute(path, text, entry.generated.injected, dict(entry.source_lines))
        function = getattr(module, entry.generated.kernel_name)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, CodegenError):
        return None
    except Exception:  # noqa: BLE001 - a stale or foreign entry (say, classes renamed): a miss
        return None
    loaded = _MEMO[(str(root), key)] = Loaded(entry, text, function, path)
    return loaded


def _seed_compiled(entry: Entry, text: str, filename: str) -> None:
    """Hand the entry's compiled code to :func:`nt_triton.cache._sources.compiled` (no
    compiling then)."""
    if entry.code:
        module, host = marshal.loads(entry.code)  # noqa: S302 - written by remember()
        sources.compiled(text, filename, module)
        sources.compiled(entry.host, host.co_filename, host)


def remember(
    key: str, entry: Entry, text: str, function: Any, host_filename: str, path: Path
) -> None:
    """Keep a freshly generated kernel (its source at ``path``) under ``key``, here and on
    disk (best effort; not on a read-only root)."""
    if entry.generated.injected:
        return  # users' triton.jit helpers are objects of this process
    root = _layout.root()
    _MEMO[(str(root), key)] = Loaded(entry, text, function, path)
    if not _layout.writable(root):
        return  # a read-only cache: an entry would name a source outside it
    try:
        codes = (sources.compiled(text, str(path)),
                 sources.compiled(entry.host, host_filename))  # fmt: skip
        entry = dataclasses.replace(
            entry, code=marshal.dumps(codes), key=key, text_hash=sources.content_hash(text)
        )
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        index = _layout.directory("index", root)
        index.mkdir(exist_ok=True)
        _layout.write_atomically(index / f"{key}.pickle", data)
    except (OSError, pickle.PicklingError, TypeError, AttributeError, ValueError):
        pass  # the index only saves time: a kernel that cannot be kept is generated again


def forget() -> None:
    """Empty this process's memo (the disk index stays)."""
    _MEMO.clear()
