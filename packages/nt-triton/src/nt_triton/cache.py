"""The on-disk cache of generated sources, keyed by content hash.

Triton compiles a kernel from its source file, and users read that file when
they debug, so every generated kernel lives in a real file.  The name is the
hash of the content, so identical kernels share a file; writes go through a
temporary file and an atomic rename, so concurrent processes never see a
half-written file; a file whose content does not match its name (corrupted,
or written by something else) is rewritten.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from nt_triton import knobs
from nt_triton.codegen import naming


def content_hash(source: str) -> str:
    """The cache key of a source text."""
    return hashlib.sha256(source.encode()).hexdigest()[:32]


def store(source: str, stem: str) -> Path:
    """Write ``source`` to the cache (if not already there intact); return its path."""
    directory = knobs.cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}_{content_hash(source)}.py"
    try:
        if path.read_text() == source:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    descriptor, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(source)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def load(path: Path, injected: Mapping[str, Any]) -> ModuleType:
    """Import the module at ``path``, with ``injected`` names defined first."""
    spec = importlib.util.spec_from_file_location(naming.module(path.stem), path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(injected)
    spec.loader.exec_module(module)
    return module
