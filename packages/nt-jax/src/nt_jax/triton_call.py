"""Launching from JAX on the GPU through jax-triton (``pip install "nt-jax[gpu]"``).

``jax_triton.triton_call`` makes the launch an XLA custom call, so it is part
of the compiled program (no Python per execution, CUDA graphs work).  Its
calling convention is fixed: the kernel receives the call's positional
arguments (arrays and scalars) in order, then one pointer per output, then
the meta-parameters by name.  Generated kernels take each tensor's pointer at
the parameter's place, so :func:`plan_triton_call` has nt-triton lay the call
out in that order (:func:`nt_triton.outputs_last`, from the kernel's typed
signature) behind a *trampoline*: a small ``@triton.jit`` function with
jax-triton's order that calls the kernel (Triton inlines it;
:func:`nt_triton.trampoline_function` loads it).  Outputs given as
arrays are passed in and aliased to their outputs (``input_output_aliases``);
jax-triton 0.3 also passes the aliased output's pointer at the end (its
"implicit output" convention; 0.4 does not).

Auto-tuned kernels: jax-triton accepts a ``triton.autotune``-wrapped kernel,
compiles every configuration and benchmarks them in XLA when the compiled
program first runs, saving and restoring aliased buffers.  The plan hands it
the trampoline wrapped in ``triton.autotune`` with the kernel's
configurations, and the grid as a function of the meta-parameters; pinned
meta symbols skip tuning.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.binding import BoundCall
from nt_jax.roles import Roles
from nt_triton import (
    LaunchPlan,
    OutputsLast,
    Trampoline,
    TritonKernel,
    compile_errors_named,
    outputs_last,
    trampoline_function,
)

LAUNCHER_VARIABLE = "NINETOOTHED_JAX_LAUNCHER"
"""Environment variable choosing the GPU launcher: ``auto`` (default),
``jax-triton`` or ``callback`` (see :mod:`nt_jax.adapter`)."""

TrampolineLayout = Trampoline
"""jax-triton's parameter order for one kernel (built by nt-triton's :class:`Trampoline`)."""

TrampolineLoader = Callable[[TritonKernel, Trampoline], Any]
"""Returns the ``@triton.jit`` trampoline for a kernel and a layout."""


@dataclass
class TritonCallPlan:
    """Everything ``jax_triton.triton_call`` is called with, for one call."""

    layout: Trampoline
    kernel: Any
    """The trampoline, or it wrapped in ``triton.autotune``."""
    args: list[Any]
    out_shape: list[jax.ShapeDtypeStruct]
    grid: Any
    """A tuple, or a function of the meta-parameters (auto-tuned kernels)."""
    input_output_aliases: dict[int, int]
    metaparams: dict[str, Any]
    num_warps: int | None
    num_stages: int | None
    empty: bool
    """The grid has no programs: nothing to launch."""
    prepared: LaunchPlan
    """The host's plan of the call (its arguments type the front-end check)."""
    compiled_meta: list[dict[str, Any]] = field(default_factory=list)
    """The meta values of every configuration jax-triton will compile."""


def call_jax_triton(kernel: TritonKernel, bound: BoundCall, roles: Roles) -> list[Any]:
    """Launch as an XLA custom call through ``jax_triton.triton_call``."""
    jax_triton = import_jax_triton(kernel.spec.label)
    version = tuple(getattr(jax_triton, "__version_info__", (0, 3, 1)))
    plan = plan_triton_call(
        kernel, bound, roles, jax_triton_version=version, trampoline=trampoline_for
    )
    if plan.empty:
        return [roles.initial(output) for output in range(len(roles.outputs))]
    # Under jax.jit, jax-triton compiles when XLA lowers the whole computation,
    # after this call: Triton's front end runs now, so a rejected application is
    # named here rather than surfacing from the lowering as Triton's own error.
    kernel.check_compiles(bound.tensors, plan.prepared, plan.compiled_meta)
    # Compiles here when JAX runs the call at once (eager calls lower it in nt_jax.eager).
    with compile_errors_named(kernel.spec.label, kernel.spec.application):
        results = jax_triton.triton_call(
            *plan.args,
            kernel=plan.kernel,
            out_shape=plan.out_shape,
            grid=plan.grid,
            name=kernel.spec.name,
            num_warps=plan.num_warps,
            num_stages=plan.num_stages,
            input_output_aliases=plan.input_output_aliases,
            **plan.metaparams,
        )
    return list(results)


def plan_triton_call(
    kernel: TritonKernel,
    bound: BoundCall,
    roles: Roles,
    *,
    jax_triton_version: tuple[int, ...],
    trampoline: TrampolineLoader,
    autotune: Callable[..., Any] | None = None,
    config: Callable[..., Any] | None = None,
) -> TritonCallPlan:
    """Assemble ``jax_triton.triton_call``'s arguments for a bound call.

    ``trampoline(kernel, layout)`` returns the jit function for a layout;
    ``autotune``/``config`` default to ``triton.autotune``/``triton.Config``
    (tests pass fakes).  ``jax_triton_version`` selects the conventions that
    changed in jax-triton 0.4: 0.3 passes aliased outputs' pointers after the
    arguments too, indexes ``input_output_aliases`` among the array arguments,
    and types Python floats as fp64.
    """
    legacy = tuple(jax_triton_version) < (0, 4)
    prepared = kernel.prepare(bound.tensors, roles.arguments, bound.scalars)
    layout = outputs_last(
        kernel, prepared, roles.arguments, roles.outputs, roles.fresh,
        every_output_last=legacy, scalar=lambda value: _scalar(value, legacy=legacy),
    )  # fmt: skip
    function = trampoline(kernel, layout.trampoline)
    resolved, meta = kernel.concrete_grid(prepared)
    plan = TritonCallPlan(
        layout=layout.trampoline,
        kernel=function,
        args=list(layout.args),
        out_shape=list(roles.out_shapes),
        grid=prepared.grid,
        input_output_aliases=_aliases(layout, roles, legacy),
        metaparams={name: _plain(value) for name, value in layout.constexprs.items()},
        num_warps=None,
        num_stages=None,
        empty=_programs(resolved) == 0,
        prepared=prepared,
    )
    if prepared.meta is not None:
        plan.metaparams.update(meta)
        plan.grid = resolved
        plan.num_warps, plan.num_stages = kernel.launch_options
        plan.compiled_meta = [meta]
    elif kernel.spec.meta_symbols:
        viable = kernel.viable_configurations(prepared)
        key = list(layout.scalar_names)
        plan.kernel = _autotuned(kernel, function, key, autotune, config, viable)
        plan.compiled_meta = [configuration.kwargs() for configuration in viable]
    else:
        first = kernel.configurations[0]
        plan.num_warps, plan.num_stages = first.num_warps, first.num_stages
        plan.compiled_meta = [first.kwargs()]
    return plan


def _autotuned(
    kernel: TritonKernel,
    function: Any,
    key: list[str],
    autotune: Callable[..., Any] | None,
    config: Callable[..., Any] | None,
    viable: Sequence[Any] | None = None,
) -> Any:
    """The trampoline wrapped in ``triton.autotune`` over the kernel's configurations
    (``viable``: those whose grid passes this call's launch checks; all by default).

    Tuned by jax-triton when the compiled program first runs; the grid stays
    a function of each configuration's meta values.  The key names every
    scalar argument (sizes, strides), which jax-triton 0.3 warns about
    otherwise; each compiled program is tuned once either way.
    """
    fake = autotune is not None or config is not None
    configurations = tuple(kernel.configurations if viable is None else viable)
    # Which configurations are viable depends on the call's sizes: one object per set.
    cache_key = (id(function), tuple(key), tuple(map(id, configurations)))
    cached = None if fake else _AUTOTUNED.setdefault(kernel, {}).get(cache_key)
    if cached is not None:
        return cached
    if autotune is None or config is None:
        import triton

        autotune = autotune or triton.autotune
        config = config or triton.Config
    # jax-triton compiles without register caps (maxnreg): configurations that differ
    # only in their cap are one configuration here.
    distinct: dict[Any, Any] = {}
    for c in configurations:
        distinct.setdefault((tuple(sorted(c.kwargs().items())), c.num_warps, c.num_stages), c)
    triton_configs = [
        config(c.kwargs(), num_warps=c.num_warps, num_stages=c.num_stages)
        for c in distinct.values()
    ]
    tuned = autotune(configs=triton_configs, key=key)(function)
    if not fake:
        # One autotune object per kernel and trampoline, not one per call.
        _AUTOTUNED[kernel][cache_key] = tuned
    return tuned


_AUTOTUNED: weakref.WeakKeyDictionary[TritonKernel, dict[Any, Any]] = weakref.WeakKeyDictionary()


def _aliases(layout: OutputsLast, roles: Roles, legacy: bool) -> dict[int, int]:
    """``input_output_aliases``: outputs given as arrays start with their contents.

    Each is indexed among the array arguments (jax-triton 0.3) or among all
    positional arguments (0.4).
    """
    positions = layout.tensor_positions
    among_arrays = {index: rank for rank, index in enumerate(positions)}
    place = among_arrays if legacy else positions
    return {
        place[roles.outputs[output]]: output
        for output in range(len(roles.outputs))
        if not roles.fresh[output]
    }


def trampoline_for(kernel: TritonKernel, layout: Trampoline) -> Any:
    """The trampoline ``@triton.jit`` function for ``layout`` (loaded once per kernel)."""
    return trampoline_function(kernel, layout)


# ---------------------------------------------------------------- choosing the launcher


def requested_launcher() -> str:
    """The launcher ``NINETOOTHED_JAX_LAUNCHER`` asks for: auto, jax-triton or callback."""
    choice = os.environ.get(LAUNCHER_VARIABLE, "auto").strip().lower() or "auto"
    if choice not in ("auto", "jax-triton", "callback"):
        raise LaunchError(
            f"{LAUNCHER_VARIABLE}={choice!r}: expected 'auto', 'jax-triton' or 'callback'"
        )
    return choice


def gpu_launcher() -> str:
    """The GPU launcher to use: ``"jax-triton"``, or ``"callback"`` where it does not import."""
    choice = requested_launcher()
    if choice != "auto":
        return choice
    try:
        import_keeping_triton_cache()
    except ImportError:
        return "callback"
    return "jax-triton"


def import_jax_triton(name: str) -> Any:
    """jax_triton, or a :class:`LaunchError` saying how to get it (kernel ``name``)."""
    try:
        jax_triton = import_keeping_triton_cache()
    except ImportError as error:
        raise LaunchError(
            f"{name}: launching on the GPU from JAX needs jax-triton, which did not import "
            f'({error}); install it with the GPU extra: pip install "nt-jax[gpu]", or set '
            f"{LAUNCHER_VARIABLE}=callback to launch from a JAX buffer callback"
        ) from error
    return jax_triton


def import_keeping_triton_cache() -> Any:
    """Import jax_triton without losing Triton's cache for everything else.

    jax-triton 0.3.1 sets ``TRITON_CACHE_DIR`` to ``""`` when imported; from
    then on Triton 3.6 refuses to compile any other kernel of the process
    ("Could not create or locate cache dir"), so PyTorch launches after a JAX
    launch failed.  jax-triton's own compile path does not use that cache, so
    the variable is put back as it was.
    """
    previous = os.environ.get("TRITON_CACHE_DIR")
    try:
        import jax_triton
    finally:
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
    return jax_triton


# ---------------------------------------------------------------- argument values


def _programs(grid: Sequence[int]) -> int:
    count = 1
    for size in grid:
        count *= int(size)
    return count


def _plain(value: Any) -> Any:
    """A Python scalar from a host-computed value (numpy scalars included)."""
    return value.item() if isinstance(value, np.generic) else value


def _scalar(value: Any, *, legacy: bool) -> Any:
    """A scalar argument, typed by jax-triton as Triton's own launcher types it.

    jax-triton 0.3 types Python floats as fp64 and ``np.float32`` as fp32;
    Triton's launcher passes Python floats as fp32, which the kernel expects.
    (0.4 types floats as Triton does and deprecates ``np.float32``.)
    """
    value = _plain(value)
    if legacy and isinstance(value, float):
        return np.float32(value)
    return value
