"""A kernel's launch handed to a compiler that emits it itself (PyTorch's Inductor).

A compiler that writes the launch into its own generated code (and records it
in its CUDA graphs) needs, for one call, what nt-triton's fast path works out
per specialisation: the ``@triton.jit`` function, its positional arguments
(the tensors where the kernel takes pointers), the grid, the constexpr meta
values and the launch options of the configuration eager calls use.
:func:`emitted_launch` gives them as an :class:`EmittedLaunch`, computed by
the kernel's own host function, so sizes and strides may be a tracer's
symbolic integers: the grid and the arguments come out as expressions of
them, and the launch-time shape checks run on them (a compiler records what
they assume).

The configuration is the one an eager call of the same tuning key gets:
pinned by the call's keywords, remembered, or read from the persisted table.
Where none is, ``tune()`` is called (the caller runs one eager call of the
same specialisation on stand-in tensors, which tunes it and records the
winner) and the choice is read again: tuning happens once, before the
compiler captures anything, and uses the same table as eager calls.

:func:`emitted_function` is the ``@triton.jit`` function as a compiler that
copies kernel sources into its own module can rebuild it: on Triton releases
whose ``triton.language`` lacks ``to_tensor``, generated modules reach it
through a module alias (``from triton.language import core as ...``), which
such a copy leaves undefined; the emitted function's module names it
``tl.core`` instead (the compiled path only: Triton's interpreter needs the
alias).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ninetoothed.runtime.binding import BoundCall
from nt_triton import _interpreter as interpreter
from nt_triton import _tuning as tuning
from nt_triton._codegen import module as generated_module
from nt_triton._kernel import TritonKernel
from nt_triton._launch.tuning_calls import run_time_scalars, tuning_key
from nt_triton.cache import _sources as sources

__all__ = ["EmittedLaunch", "emitted_function", "emitted_launch"]


class EmittedLaunch(NamedTuple):
    """One call's launch, as a compiler emits it."""

    function: Any
    """The ``@triton.jit`` function (:func:`emitted_function`)."""
    arguments: tuple[Any, ...]
    """The positional arguments, in the kernel's order: the call's tensors where it takes
    pointers, then sizes, strides, scalars and host-computed constexprs."""
    grid: tuple[Any, ...]
    meta: dict[str, int]
    """The meta parameters (tile sizes and what is derived from them), by keyword."""
    num_warps: int
    num_stages: int


class _Untuned(Exception):
    """Raised from the tuner's callback: the key has no configuration without tuning."""


def emitted_launch(
    kernel: TritonKernel,
    bound: BoundCall,
    concrete: BoundCall,
    device_name: str,
    tune: Callable[[], None],
) -> EmittedLaunch | None:
    """The launch of ``bound``, or None where no configuration can be found for it.

    ``bound`` is the validated call (sizes and strides may be symbolic), its
    tensors' own objects in :attr:`~BoundCall.tensor_arguments`; ``concrete``
    the same call with plain integers (a tracer's hints), from which the tuning
    key is made; ``device_name`` the name tuning tables are kept under for the
    call's GPU; ``tune()`` an eager call of the same specialisation (see the
    module docstring).
    """
    plan = kernel.prepare(bound.tensors, bound.tensor_arguments, bound.scalars)
    configuration = _configuration(kernel, plan.meta, concrete, device_name, tune)
    if configuration is None:
        return None
    values = configuration.kwargs()
    grid = plan.grid(values) if callable(plan.grid) else plan.grid
    meta = {parameter.name: values[parameter.name] for parameter in kernel.signature.meta}
    return EmittedLaunch(
        emitted_function(kernel),
        tuple(plan.arguments),
        tuple(grid),
        meta,
        configuration.num_warps,
        configuration.num_stages,
    )


def _configuration(
    kernel: TritonKernel,
    pinned: dict[str, int] | None,
    concrete: BoundCall,
    device_name: str,
    tune: Callable[[], None],
) -> tuning.Configuration | None:
    """Pinned, remembered or persisted; else tuned by ``tune()`` and read again."""
    if pinned is not None:
        num_warps, num_stages = kernel.launch_options
        return tuning.Configuration(dict(pinned), num_warps, num_stages)
    key = tuning_key(concrete, run_time_scalars(kernel))
    for attempt in range(2):
        try:
            return kernel.tuner.choose(key, device_name, _untuned)
        except _Untuned:
            if attempt == 0:
                tune()
    return None


def _untuned() -> Any:
    raise _Untuned


_EMITTED: dict[str, Any] = {}
"""The emitted function of each kernel whose module needed rewriting, by source path."""


def emitted_function(kernel: TritonKernel) -> Any:
    """The kernel's ``@triton.jit`` function for a compiler that copies its source (see the
    module docstring); the kernel's own function where its module needs no rewriting."""
    alias = generated_module._CORE  # the name generated modules give it
    if f"{alias}." not in kernel.source:
        return kernel.function
    found = _EMITTED.get(kernel.source_path)
    if found is None:
        text = kernel.source.replace(f"from triton.language import core as {alias}\n", "")
        text = text.replace(f"{alias}.", "tl.core.")
        name = kernel.function.__name__
        with interpreter.LOCK:  # Python's syntax trees: see nt_triton._interpreter
            path = Path(kernel.source_path)
            virtual = path.with_name(f"{path.stem}_emitted.py")  # never written: linecache
            module = sources.execute(virtual, text, kernel.injected)
        found = _EMITTED[kernel.source_path] = getattr(module, name)
    return found
