"""NineToothed's Triton code generator.

Turns a validated :class:`ninetoothed.spec.kernel_spec.KernelSpec` into a Triton kernel
and launches it.  ``ninetoothed`` finds it through the ``ninetoothed``
entry-point group (:mod:`nt_triton.plugin`); users do not import it.

Public modules: this one, :mod:`nt_triton.plugin` (the entry point),
:mod:`nt_triton.knobs` (environment knobs), :mod:`nt_triton.cache` (where
NineToothed keeps what it generates, and how to size and clear it) and
:mod:`nt_triton.tuner` (moving tuning results between machines),
:mod:`nt_triton.hopper_attention` and :mod:`nt_triton.hopper_scaled_mm`
(attention's forward and the float8 product on Hopper, written in Gluon, which
the PyTorch adapter routes the library's ops to).  Every other
module is internal (``_codegen``, ``_launch``, ``_kernel`` …: a ``_`` in the
path); ``docs/design.md`` maps them.

The names below are the contract adapters and the ahead-of-time builder
may rely on beyond :mod:`ninetoothed.runtime.hookspecs`: the generated kernel
(:class:`TritonKernel` and its :class:`LaunchPlan`, for launchers that run
Triton kernels themselves), another launcher's parameter order
(:func:`outputs_last`, :class:`OutputsLast`, :class:`Trampoline`,
:func:`trampoline_function`), compile errors named after the application
(:func:`compile_errors_named`), the interpreter's torch interop, and the
modules nt-triton's fingerprints version (:data:`VERSIONED_MODULES`).  They are
imported on first use, so that loading the entry point stays cheap (every
``ninetoothed`` process loads it; Triton is imported only when a kernel is made).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from nt_triton._version import VERSION as __version__
from nt_triton._version import VERSIONED_MODULES

if TYPE_CHECKING:
    from nt_triton._failures import compile_errors_named
    from nt_triton._host import LaunchPlan
    from nt_triton._interop import (
        dlpack_views,
        empty_tensor,
        from_buffer,
        from_numpy,
        to_numpy,
        torch_module,
    )
    from nt_triton._kernel import TritonKernel
    from nt_triton._trampoline import OutputsLast, Trampoline, outputs_last, trampoline_function

__all__ = [
    "LaunchPlan",
    "OutputsLast",
    "Trampoline",
    "TritonKernel",
    "VERSIONED_MODULES",
    "__version__",
    "compile_errors_named",
    "dlpack_views",
    "empty_tensor",
    "from_buffer",
    "from_numpy",
    "outputs_last",
    "to_numpy",
    "torch_module",
    "trampoline_function",
]

_EXPORTS: dict[str, tuple[str, str]] = {
    "LaunchPlan": ("nt_triton._host", "LaunchPlan"),
    "OutputsLast": ("nt_triton._trampoline", "OutputsLast"),
    "Trampoline": ("nt_triton._trampoline", "Trampoline"),
    "TritonKernel": ("nt_triton._kernel", "TritonKernel"),
    "compile_errors_named": ("nt_triton._failures", "compile_errors_named"),
    "dlpack_views": ("nt_triton._interop", "dlpack_views"),
    "empty_tensor": ("nt_triton._interop", "empty_tensor"),
    "from_buffer": ("nt_triton._interop", "from_buffer"),
    "from_numpy": ("nt_triton._interop", "from_numpy"),
    "outputs_last": ("nt_triton._trampoline", "outputs_last"),
    "to_numpy": ("nt_triton._interop", "to_numpy"),
    "torch_module": ("nt_triton._interop", "torch_module"),
    "trampoline_function": ("nt_triton._trampoline", "trampoline_function"),
}
"""Each re-exported name: the internal module defining it, and its name there."""


def __getattr__(name: str) -> object:
    """Import a re-exported name on first use (PEP 562)."""
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module 'nt_triton' has no attribute {name!r}")
    value = getattr(importlib.import_module(found[0]), found[1])
    globals()[name] = value
    return value
