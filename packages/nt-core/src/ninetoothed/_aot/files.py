"""A library's directory: created and checked, and its files reused while current.

Beside ``<kernel_name>.so`` a build writes ``<kernel_name>.json`` (the
library's :class:`~ninetoothed.aot.CLibrary` description) and
``<kernel_name>.fingerprint``: a hash of everything that shapes the files
(each kernel's spec fingerprint, the variants, the target, the builder's and
its compiler's versions).  A later ``make`` or ``build`` with the same
fingerprint loads what is there instead of compiling (:func:`load_if_current`);
any change, or a kernel that cannot be fingerprinted safely, compiles again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ninetoothed.aot import CLibrary
from ninetoothed.runtime.hookspecs import AheadOfTimeBuilder
from ninetoothed.spec.fingerprint import spec_fingerprint
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["load_if_current", "prepare_output_dir", "remember", "stamp"]


def prepare_output_dir(function: str, output_dir: Path) -> Path:
    """``output_dir``, created if missing, absolute; raises :class:`OSError` subclasses'
    message as a :class:`PermissionError`/:class:`NotADirectoryError` naming it."""
    path = output_dir.expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as error:
        raise NotADirectoryError(
            f"{function}: output_dir={str(output_dir)!r} exists and is not a directory"
        ) from error
    except OSError as error:
        raise PermissionError(
            f"{function}: cannot create output_dir={str(output_dir)!r} "
            f"({error.strerror or error}); give a directory you can write to"
        ) from error
    probe = path / f".ninetoothed-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise PermissionError(
            f"{function}: cannot write into output_dir={str(output_dir)!r} "
            f"({error.strerror or error}); give a directory you can write to"
        ) from error
    return path


def stamp(specs: Iterable[KernelSpec], builder: AheadOfTimeBuilder, *parts: object) -> str | None:
    """The fingerprint of ``specs``, ``builder``'s stamp and ``parts`` (reprs), or None when a
    spec has none (the specs' fingerprints name what the builder versions)."""
    digest = hashlib.sha256()
    versioned = builder.versioned_modules()
    for spec in specs:
        fingerprint = spec_fingerprint(spec, versioned=versioned)
        if fingerprint is None:
            return None
        digest.update(fingerprint.encode())
    for part in (builder.stamp(), *parts):
        digest.update(repr(part).encode())
    return digest.hexdigest()


def _paths(output_dir: Path, kernel_name: str) -> tuple[Path, Path]:
    return output_dir / f"{kernel_name}.fingerprint", output_dir / f"{kernel_name}.json"


def load_if_current(output_dir: Path, kernel_name: str, fingerprint: str | None) -> CLibrary | None:
    """The library built before with ``fingerprint``, if its files are all there."""
    if fingerprint is None:
        return None
    fingerprint_path, description_path = _paths(output_dir, kernel_name)
    try:
        if fingerprint_path.read_text().strip() != fingerprint:
            return None
        library = CLibrary.from_json(description_path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    files: Sequence[Path] = (library.library, library.header, library.source)
    if not all(path.is_file() for path in files):
        return None
    return library


def remember(
    output_dir: Path, kernel_name: str, fingerprint: str | None, library: CLibrary
) -> None:
    """Write the description and the fingerprint beside the library (the fingerprint
    last: a build interrupted before it is not taken for a current one)."""
    fingerprint_path, description_path = _paths(output_dir, kernel_name)
    fingerprint_path.unlink(missing_ok=True)
    description_path.write_text(library.to_json())
    if fingerprint is not None:
        fingerprint_path.write_text(fingerprint + "\n")
