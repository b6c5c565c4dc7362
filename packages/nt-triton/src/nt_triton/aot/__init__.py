"""Ahead-of-time compilation into C libraries, with Triton (the ``"cuda"`` caller).

:data:`BUILDER` is what ``ninetoothed.make(..., caller="cuda")`` and
``ninetoothed.build`` reach through the ``ninetoothed_ahead_of_time_builder``
hook (:class:`ninetoothed.runtime.hookspecs.AheadOfTimeBuilder`).  A library needs
no CUDA toolkit to build (Triton compiles for the named target, the system C
compiler builds against Triton's ``cuda.h``) and only the NVIDIA driver to
run (``libcuda.so.1``, loaded at the first call).  The modules:

* :mod:`nt_triton.description` -- the one place it reads the rest of nt-triton:
  the public kernel description (the kernel's signature, grid, launch checks;
  compiling one specialisation);
* :mod:`._variants`, :mod:`._buckets` -- the specialisations a library holds
  of a kernel (per power of two of whole-dimension tiles of run-time sizes);
* :mod:`._compile` -- targets, and compiling in parallel worker processes;
* :mod:`._cexpr`, :mod:`._writer`, :mod:`._launcher`, :mod:`._aliasing`,
  :mod:`._selection` -- the C launch function (host checks, memory written
  tensors share, grid, choice of specialisation, launch), :file:`runtime.c`
  its support;
* :mod:`._sources`, :mod:`._cc`, :mod:`._library` -- headers and sources,
  the C compiler, a library's files;
* :mod:`._dispatch`, :mod:`._dispatcher`, :mod:`._timing` -- ``build``'s
  dispatcher and its build-time tuning.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from ninetoothed.aot import BuildVariant, CLibrary
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import VERSIONED_MODULES

__all__ = ["BUILDER", "TritonBuilder"]


class TritonBuilder:
    """Builds C libraries of Triton kernels (an ``AheadOfTimeBuilder``)."""

    def stamp(self) -> str:
        """Versions and source files of what compiles (no Triton import: it is slow)."""
        return _stamp()

    def versioned_modules(self) -> tuple[str, ...]:
        """nt-triton and Triton: :meth:`stamp` covers their versions and source files."""
        return VERSIONED_MODULES

    def make(
        self, spec: KernelSpec, *, kernel_name: str, output_dir: Path, target: str | None
    ) -> CLibrary:
        """One kernel's library: ``launch_<kernel_name>`` and its files in ``output_dir``."""
        from nt_triton.aot import _compile, _library
        from nt_triton.description import describe

        target_ = _compile.parse_target(target, "make")
        description = describe(spec)
        # The library's own errors begin as the Python callable's do: with the spec's label.
        (kernel,) = _library.compile_kernels([description], [kernel_name], [spec.label], target_)
        origin = repr(spec.name)
        unit = _library.write_kernel(kernel, output_dir, target_, origin)
        library = output_dir / f"{kernel_name}.so"
        _library.finish(output_dir, [unit], library)
        return CLibrary(
            kernel_name=kernel_name,
            function=f"launch_{kernel_name}",
            parameters=_library.parameters(spec),
            library=library,
            header=output_dir / f"{kernel_name}.h",
            source=unit,
            built=tuple(f"{kernel_name} [{c.plan.describe()}]" for c in kernel.compiled),
        )

    def build(
        self,
        variants: Sequence[BuildVariant],
        *,
        key_names: Sequence[str],
        kernel_name: str,
        output_dir: Path,
        target: str | None,
    ) -> CLibrary:
        """Every variant, tuned per key, behind one dispatcher (:mod:`._dispatch`)."""
        from nt_triton.aot import _dispatch

        return _dispatch.build(
            variants,
            key_names=key_names,
            kernel_name=kernel_name,
            output_dir=output_dir,
            target=target,
        )

    def link(self, sources: Sequence[Path], library: Path, include: Sequence[Path] = ()) -> None:
        """Compile C ``sources`` (units this builder wrote, and C that calls their launch
        functions) with ``include`` and link them into ``library``: objects of units a
        build compiled are reused (``.objects`` beside them)."""
        from nt_triton.aot import _cc
        from nt_triton.aot._dispatch import OBJECTS

        objects = []
        for directory in dict.fromkeys(source.parent for source in sources):
            mine = [source for source in sources if source.parent == directory]
            (directory / OBJECTS).mkdir(exist_ok=True)
            objects += _cc.objects(mine, [directory, *include], directory / OBJECTS)
        _cc.link(objects, library)


@functools.cache
def _stamp() -> str:
    """Versions of Python, Triton, NineToothed and nt-triton, and their source files'
    sizes and times (an edited checkout builds anew)."""
    import ninetoothed
    import nt_triton

    parts = [sys.version, _version("triton")]
    for package in (ninetoothed, nt_triton):
        root = Path(str(package.__file__)).parent
        for directory, subdirectories, files in os.walk(root):
            subdirectories.sort()
            for name in sorted(files):
                if name.endswith((".py", ".c", ".h")):
                    status = os.stat(os.path.join(directory, name))
                    parts.append(f"{name}:{status.st_mtime_ns}:{status.st_size}")
    return "|".join(parts)


def _version(distribution: str) -> str:
    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return f"{distribution} ?"


BUILDER = TritonBuilder()
"""The builder the plugin hands out."""
