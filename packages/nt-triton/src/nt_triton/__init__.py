"""NineToothed's Triton code generator.

Turns a validated :class:`ninetoothed.spec.kernel_spec.KernelSpec` into a Triton kernel
and launches it.  ``ninetoothed`` finds it through the ``ninetoothed``
entry-point group (:mod:`nt_triton.plugin`); users do not import it.

Public modules: this one, :mod:`nt_triton.plugin` (the entry point),
:mod:`nt_triton.knobs` (environment knobs), :mod:`nt_triton.cache` (where
NineToothed keeps what it generates, and how to size and clear it) and
:mod:`nt_triton.tuner` (moving tuning results between machines).  Every other
module is internal (``_codegen``, ``_launch``, ``_kernel`` …: a ``_`` in the
path); ``docs/design.md`` maps them.

The names below are what framework adapters use today: the generated kernel
(:class:`TritonKernel`, its :class:`LaunchPlan`, :data:`LOADED`), the kernel
ABI (:class:`ParameterKind`), trampolines (:class:`Trampoline` and the names it
uses), compile errors
(:func:`compile_errors_named`) and the interpreter's torch interop.  They are
imported on first use, so that loading the entry point stays cheap (every
``ninetoothed`` process loads it; Triton is imported only when a kernel is made).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from nt_triton._version import VERSION as __version__

if TYPE_CHECKING:
    from nt_triton._abi import ParameterKind
    from nt_triton._codegen.naming import output_pointer as output_pointer_name
    from nt_triton._codegen.naming import trampoline as trampoline_name
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
    from nt_triton._kernel import LOADED, TritonKernel
    from nt_triton._trampoline import Trampoline

__all__ = [
    "LOADED",
    "LaunchPlan",
    "ParameterKind",
    "Trampoline",
    "TritonKernel",
    "__version__",
    "compile_errors_named",
    "dlpack_views",
    "empty_tensor",
    "from_buffer",
    "from_numpy",
    "output_pointer_name",
    "to_numpy",
    "torch_module",
    "trampoline_name",
]

_EXPORTS: dict[str, tuple[str, str]] = {
    "LOADED": ("nt_triton._kernel", "LOADED"),
    "LaunchPlan": ("nt_triton._host", "LaunchPlan"),
    "ParameterKind": ("nt_triton._abi", "ParameterKind"),
    "Trampoline": ("nt_triton._trampoline", "Trampoline"),
    "TritonKernel": ("nt_triton._kernel", "TritonKernel"),
    "compile_errors_named": ("nt_triton._failures", "compile_errors_named"),
    "dlpack_views": ("nt_triton._interop", "dlpack_views"),
    "empty_tensor": ("nt_triton._interop", "empty_tensor"),
    "from_buffer": ("nt_triton._interop", "from_buffer"),
    "from_numpy": ("nt_triton._interop", "from_numpy"),
    "output_pointer_name": ("nt_triton._codegen.naming", "output_pointer"),
    "to_numpy": ("nt_triton._interop", "to_numpy"),
    "torch_module": ("nt_triton._interop", "torch_module"),
    "trampoline_name": ("nt_triton._codegen.naming", "trampoline"),
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
