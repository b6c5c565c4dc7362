"""Building the kernel library as a C library: every kernel, the C API, the package.

:func:`build_library` writes into ``out``::

    include/ninetoothed_ops.h       the C API (and include/ninetoothed.h)
    lib/libninetoothed_ops.so       every kernel and the C API in one library
    lib/cmake/NineToothedOps/       find_package(NineToothedOps)
    src/<kernel>/                   each kernel's generated sources, tuning table
    src/ninetoothed_ops.c           the C API's source (and its headers)

Each kernel is built like ``ninetoothed.build`` builds (variants compiled in
parallel, tuned per key on the GPU, a dispatcher ``launch_nt_ops_<kernel>``)
and reused while its fingerprint matches; the whole build is skipped while
the library's matches (the ops, dtypes, target, options and the versions of
what compiles), which takes milliseconds.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import ninetoothed
from ninetoothed._aot import files
from ninetoothed.aot import HEADER_PATH
from ninetoothed.arrangement.dtype import canonical
from ninetoothed.errors import MetaOperationError
from ninetoothed.library.build import cmake
from ninetoothed.library.build.catalogue import OPS, Kernel, Options, kernels, op_names
from ninetoothed.library.build.header import config_header, header
from ninetoothed.library.build.variants import build_variants
from ninetoothed.library.ops._common import FLOATS
from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import AheadOfTimeBuilder

__all__ = ["LIBRARY", "build_library"]

LIBRARY = "libninetoothed_ops.so"

_SOURCES = ("ops.c", "ops_common.h", "ops_matmul.h", "ops_rows.h", "ops_attention.h")
"""The C API's hand-written sources, beside this module."""


def build_library(
    out: str | Path,
    ops: Sequence[str] | None = None,
    dtypes: Sequence[str] = ("float16",),
    target: str | None = None,
    options: Options = Options(),
    caller: str = "cuda",
) -> Path:
    """Build the C library of ``ops`` (default: every forward op) for ``dtypes`` and
    ``target`` (``"sm_90"``; None: the current GPU's) into ``out``; returns the
    library's path.  See the module docstring and ``docs/aot.md``."""
    names = op_names(list(OPS) if ops is None else list(ops))
    chosen = _dtypes(dtypes)
    _check(options)
    out = files.prepare_output_dir("ninetoothed.library.build", Path(out))
    builder = plugins.ahead_of_time_builder(caller)
    library = out / "lib" / LIBRARY
    stamp = _stamp(builder.stamp(), names, chosen, target, options)
    if _current(out, stamp, library):
        return library
    src, include = out / "src", out / "include"
    for directory in (src, include, library.parent):
        directory.mkdir(parents=True, exist_ok=True)
    (out / "ninetoothed_ops.fingerprint").unlink(missing_ok=True)
    headers, sources = [], []
    for kernel in kernels(names, options):
        headers.append(_build_kernel(builder, kernel, chosen, target, options, src))
        sources += sorted((src / kernel.name).glob("*.c"))
    target_name = target or "the GPU it was built on"
    (include / "ninetoothed_ops.h").write_text(header(names, chosen, target_name, options))
    shutil.copyfile(HEADER_PATH, include / HEADER_PATH.name)
    (src / "ninetoothed_ops_config.h").write_text(config_header(names, chosen, headers, options))
    for name in _SOURCES:
        shutil.copyfile(Path(__file__).with_name(name), src / name)
    shutil.move(src / "ops.c", src / "ninetoothed_ops.c")
    builder.link([*sources, src / "ninetoothed_ops.c"], library, [include])
    cmake.write_package(out, ninetoothed.__version__, target_name, chosen, names)
    (out / "ninetoothed_ops.fingerprint").write_text(stamp + "\n")
    return library


def _dtypes(dtypes: Sequence[str]) -> list[str]:
    """``dtypes`` as canonical names, each one the ops support."""
    chosen = []
    for dtype in dtypes:
        try:
            name = canonical(dtype).name
        except MetaOperationError as error:
            raise ValueError(f"ninetoothed.library.build: {error}") from error
        if name not in FLOATS:
            raise ValueError(
                f"ninetoothed.library.build: the ops take {', '.join(FLOATS)}, not {dtype!r}"
            )
        chosen.append(name)
    if not chosen:
        raise ValueError("ninetoothed.library.build: give at least one dtype")
    return list(dict.fromkeys(chosen))


def _check(options: Options) -> None:
    """Refuse limits the library cannot be built for, naming them."""
    row = options.max_row
    if row < 1 or row & (row - 1):
        raise ValueError(f"ninetoothed.library.build: max_row must be a power of two, got {row}")
    if not 1 <= options.max_ndim <= 8:
        raise ValueError(
            f"ninetoothed.library.build: max_ndim must be from 1 to 8, got {options.max_ndim}"
        )
    for head in options.head_dims:
        if head < 16 or head > 256 or head & (head - 1):
            raise ValueError(
                "ninetoothed.library.build: head dimensions are powers of two from 16 to 256, "
                f"got {head}"
            )
    if options.configurations < 1:
        raise ValueError("ninetoothed.library.build: configurations must be at least 1")


def _stamp(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _current(out: Path, stamp: str, library: Path) -> bool:
    """Whether the library in ``out`` is the one this build would write."""
    try:
        recorded = (out / "ninetoothed_ops.fingerprint").read_text().strip()
    except OSError:
        return False
    return recorded == stamp and library.is_file() and (out / "include/ninetoothed_ops.h").is_file()


def _build_kernel(
    builder: AheadOfTimeBuilder,
    kernel: Kernel,
    dtypes: Sequence[str],
    target: str | None,
    options: Options,
    src: Path,
) -> str:
    """Build (or reuse) one kernel's dispatcher in ``src/<kernel>``; its header's path
    relative to ``src``."""
    directory = src / kernel.name
    directory.mkdir(parents=True, exist_ok=True)
    key_names, variants = build_variants(kernel, dtypes, options)
    name = f"nt_ops_{kernel.name}"
    described = [(v.key, v.label, v.constants, v.sizes, v.configurations) for v in variants]
    stamp = files.stamp([v.spec for v in variants], builder, target, key_names, described)
    if files.load_if_current(directory, name, stamp) is None:
        for stale in directory.glob("*.c"):  # units of variants no longer built
            stale.unlink()
        built = builder.build(
            variants, key_names=key_names, kernel_name=name, output_dir=directory, target=target
        )
        files.remember(directory, name, stamp, built)
    return f"{kernel.name}/{name}.h"
