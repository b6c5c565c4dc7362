"""The Triton code-generation backend: ``generate(spec) -> TritonKernel``.

Generation runs the stages once per kernel, each on the previous one's
output: code generation (:func:`nt_triton._codegen.generate`), the tuning
space (:func:`nt_triton._tuning.configurations`), host code
(:func:`nt_triton._host.host_source`); then the source file is written to the
cache, in one piece, and loaded; under the interpreter the kernel's front end
is also compiled for a GPU target (:mod:`nt_triton._gpu_check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ninetoothed.errors import CodegenError
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _codegen as codegen
from nt_triton import _gpu_check as gpu_check
from nt_triton import _tuning as tuning
from nt_triton import knobs
from nt_triton._abi import ParameterKind
from nt_triton._codegen import GeneratedSource
from nt_triton._host import host_filename, host_source
from nt_triton._kernel import TritonKernel
from nt_triton.cache import _locks
from nt_triton.cache import _reuse as index
from nt_triton.cache import _sources as sources
from nt_triton.tuner import _early as early

__all__ = ["TritonBackend", "file_text"]

_HOST_FLAGS = (
    ParameterKind.INT64_FLAG,
    ParameterKind.LAYOUT_FLAG,
    ParameterKind.DESCRIPTOR_FLAG,
    ParameterKind.SIZE_ALIGNMENT,
)
"""Constexpr parameters the host computes (no caller gives them)."""


class TritonBackend:
    """The ``"triton"`` code-generation backend (a ``CodegenBackend``)."""

    name = "triton"

    def generate(self, spec: KernelSpec) -> TritonKernel:
        """The kernel for ``spec``: kept from before under its fingerprint, else generated.

        Processes making the same kernel at once generate it once: the first
        holds the fingerprint's lock while it generates and keeps the kernel;
        the others wait, then find it kept.  A first tuning's compile workers and
        Triton's cache key get ready meanwhile (:mod:`nt_triton.tuner._early`).
        """
        key = index.fingerprint(spec)
        found = None if key is None else index.lookup(key)
        if found is None:
            early.ahead(spec, key)
        else:
            early.ahead(spec, key, found.path, len(found.entry.configurations))
        if key is None:
            return _generated(spec)[0]
        if found is None:
            with _locks.held("index", key):
                found = index.lookup(key)  # kept by another process meanwhile?
                if found is None:
                    kernel, entry = _generated(spec)
                    path = Path(kernel.source_path)
                    index.remember(key, entry, kernel.source, kernel.function,
                                   host_filename(spec), path)  # fmt: skip
                    return kernel
        return _kept(spec, found)


def _kept(spec: KernelSpec, found: index.Loaded) -> TritonKernel:
    """The kernel of an index entry: no code generation, no compiling, no GPU check."""
    entry = found.entry
    kernel = TritonKernel(
        spec, entry.generated, entry.configurations, entry.host, found.text, found.path,
        found.function,
    )  # fmt: skip
    kernel.gpu_check_pending = entry.gpu_check_pending
    return kernel


def _generated(spec: KernelSpec) -> tuple[TritonKernel, index.Entry]:
    """Generate, write, load (and under the interpreter check) the kernel; and its entry."""
    generated = codegen.generate(spec)
    configurations = tuning.configurations(
        spec, generated.footprint, generated.signature, "tl.dot(" in generated.source
    )
    host = host_source(spec, generated)
    text = file_text(spec, generated, configurations, host)
    path = sources.store(text, generated.kernel_name)
    lines: sources.SourceLines = {}
    function = getattr(sources.load(path, generated.injected, lines), generated.kernel_name)
    kernel = TritonKernel(spec, generated, configurations, host, text, path, function)
    if knobs.interpreting() and knobs.gpu_check():
        _check_for_gpu(spec, generated, kernel)
    entry = index.Entry(generated, tuple(configurations), host, path.name,
                        kernel.gpu_check_pending, source_lines=lines)  # fmt: skip
    return kernel, entry


def _check_for_gpu(spec: KernelSpec, generated: GeneratedSource, kernel: TritonKernel) -> None:
    """Under the interpreter: the kernel must compile for a GPU (raises, or defers to calls)."""
    # The interpreter runs code a GPU compiler rejects: say so at make.
    configurations = kernel.configurations
    meta = dict(configurations[0].kwargs()) if configurations else {}
    try:
        gpu_check.check(spec, kernel.function, generated.signature, meta)
    except CodegenError:
        caller_given = [
            p for p in generated.signature
            if p.constexpr and p.name not in meta and p.kind not in _HOST_FLAGS
        ]  # fmt: skip
        # Placeholder values for sizes the caller gives may contradict each other
        # (a table of head_dim / 2), and one default element type for every tensor
        # may not fit (a gather's int64 indices beside float data): decide on the
        # first call's values and types.
        if not caller_given and not gpu_check.compiles_with_index_tensors(
            spec, kernel.function, generated.signature, meta
        ):
            raise
        kernel.gpu_check_pending = True


def file_text(
    spec: KernelSpec,
    generated: GeneratedSource,
    configurations: Sequence[tuning.Configuration],
    host: str,
) -> str:
    """The cached source file: the kernel module, then (as comments) the tuning
    configurations and the host code, which users read when they debug."""
    parts = [generated.source]
    if spec.meta_symbols:
        parts.append("\n\n" + tuning.listing(configurations))
    parts.append("\n\n# Host code (runs in the launcher, not on the device):\n")
    parts.append("\n".join(f"# {line}" for line in host.splitlines()) + "\n")
    return "".join(parts)
