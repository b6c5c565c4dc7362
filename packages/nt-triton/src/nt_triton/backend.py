"""The Triton code-generation backend: ``generate(spec) -> TritonKernel``.

Generation runs the stages once per kernel, each on the previous one's
output: code generation (:func:`nt_triton.codegen.generate`), the tuning
space (:func:`nt_triton.tuning.configurations`), host code
(:func:`nt_triton.host.host_source`); then the source file is written to the
cache, in one piece, and loaded; under the interpreter the kernel's front end
is also compiled for a GPU target (:mod:`nt_triton.gpu_check`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ninetoothed.errors import CodegenError
from ninetoothed.ir import KernelSpec
from nt_triton import cache, codegen, gpu_check, knobs, tuning
from nt_triton.abi import ParameterKind
from nt_triton.codegen import GeneratedSource
from nt_triton.host import host_source
from nt_triton.kernel import TritonKernel

_HOST_FLAGS = (ParameterKind.INT64_FLAG, ParameterKind.LAYOUT_FLAG)
"""Constexpr parameters the host computes (no caller gives them)."""


class TritonBackend:
    """The ``"triton"`` code-generation backend (a ``CodegenBackend``)."""

    name = "triton"

    def generate(self, spec: KernelSpec) -> TritonKernel:
        """Write, cache and load the kernel for ``spec``."""
        generated = codegen.generate(spec)
        configurations = tuning.configurations(
            spec, generated.footprint, generated.signature, "tl.dot(" in generated.source
        )
        host = host_source(spec, generated)
        text = file_text(spec, generated, configurations, host)
        path = cache.store(text, generated.kernel_name)
        kernel = TritonKernel(spec, generated, configurations, host, text, path)
        if knobs.interpreting() and knobs.gpu_check():
            # The interpreter runs code a GPU compiler rejects: say so at make.
            meta = dict(configurations[0].kwargs()) if configurations else {}
            try:
                gpu_check.check(spec, kernel.function, generated.signature, meta)
            except CodegenError:
                caller_given = [
                    p for p in generated.signature
                    if p.constexpr and p.name not in meta and p.kind not in _HOST_FLAGS
                ]  # fmt: skip
                if not caller_given:
                    raise
                # Placeholder values for sizes the caller gives may contradict
                # each other (a table of head_dim / 2): decide on the first call's.
                kernel.gpu_check_pending = True
        return kernel


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
