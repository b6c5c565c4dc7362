"""The fast path's side of tuning: the tuning key of a call, and what the tuner needs.

On a miss whose configuration is not pinned, the launcher asks the kernel's
tuner (:mod:`nt_triton.tuner`) for the configuration of the call's *tuning
key* (:func:`tuning_key`).  A key seen for the first time is tuned, and the
tuner gets a :class:`~nt_triton.tuner._core.TuningCall` (:func:`tuning_call`):
compile jobs for its worker processes, a launch of each configuration on the
call's own arguments, the framework's timer, and snapshots of what those
launches overwrite (:func:`restores`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import HostReads
from nt_triton import _tuning as tuning
from nt_triton._launch import compiled
from nt_triton._launch.target import LaunchTarget
from nt_triton.tuner import _early as early
from nt_triton.tuner._core import TuningCall

__all__ = [
    "MissedCall",
    "constexpr_scalars",
    "fit_of",
    "itemsize",
    "restores",
    "run_time_scalars",
    "tuning_call",
    "tuning_key",
]


class MissedCall(NamedTuple):
    """One validated call on its way through the miss path."""

    bound: BoundCall
    prepared: Any
    device: int
    pointers: list[int]
    scalars: list[Any]


def tuning_key(bound: BoundCall, positional: frozenset[str] = frozenset()) -> tuple[Any, ...]:
    """What the best configuration depends on: sizes, dtypes, unit strides, keyword
    symbols and constexpr scalars.

    The scalars named in ``positional`` (the run-time ``Tensor(0)`` parameters)
    are left out: a seed or a factor that changes every call must not re-tune
    every call.
    """
    tensors = bound.tensors
    return (
        tuple(t.shape for t in tensors),
        tuple(t.dtype for t in tensors),
        tuple(tuple(s == 1 for s in t.strides) for t in tensors),
        tuple(sorted((k, v) for k, v in bound.scalars.items() if k not in positional)),
    )


def constexpr_scalars(kernel: LaunchTarget) -> frozenset[int]:
    """Positions (among the call's arguments) of the scalar parameters the kernel takes
    as ``tl.constexpr``: compiled in, so their values are part of a specialisation."""
    checks = kernel.spec.call_checks
    by_name = kernel.signature.by_name
    return frozenset(
        i
        for i, check in enumerate(checks)
        if check.is_scalar and check.name in by_name and by_name[check.name].constexpr
    )


def run_time_scalars(kernel: LaunchTarget) -> frozenset[str]:
    """The run-time positional scalars, left out of the tuning key (see :func:`tuning_key`).

    Constexpr ones stay in it: each value is another compiled kernel with its own
    best configuration (attention with and without its causal mask: 64 x 64 blocks
    against 128 x 128)."""
    checks = kernel.spec.call_checks
    compiled_in = constexpr_scalars(kernel)
    return frozenset(
        check.name for i, check in enumerate(checks) if check.is_scalar and i not in compiled_in
    )


def tuning_call(
    kernel: LaunchTarget,
    reads: HostReads,
    call: MissedCall,
    positional: frozenset[str],
    pointer_types: dict[int, tuple[str, bool]],
    launch_of: Callable[[tuning.Configuration], Callable[..., Any]],
) -> TuningCall:
    """What the tuner needs to compile, run and time this call's configurations.

    ``pointer_types`` are the call's pointer parameters' element types and
    alignments (:func:`nt_triton._launch.compiled.specialise`); ``launch_of``
    binds the call's launch for one configuration (compiling it: a disk hit
    after a worker compiled it).
    """
    import triton

    bound, prepared, device, pointers, scalars = call
    early.driver_settled()
    target = triton.runtime.driver.active.get_current_target()
    parameters = [(p.name, p.constexpr) for p in kernel.signature]

    def job(configuration: tuning.Configuration) -> dict[str, Any]:
        meta = configuration.kwargs()
        values = list(prepared.arguments) + [meta[p.name] for p in kernel.signature.meta]
        special = compiled.specialise(parameters, values, pointer_types)
        return {
            "path": kernel.source_path,
            "name": kernel.function.__name__,
            "signature": special.signature,
            "constexprs": special.constexprs,
            "attrs": special.attrs,
            "target": [target.backend, target.arch, target.warp_size],
            "num_warps": configuration.num_warps,
            "num_stages": configuration.num_stages,
            "maxnreg": configuration.maxnreg,
        }

    def launch(configuration: tuning.Configuration) -> Callable[[], None]:
        run = launch_of(configuration)
        stream = reads.raw_stream(device)
        return lambda: run(stream, *pointers, *scalars)

    if reads.timer is None:
        raise LaunchError(f"{kernel.spec.label}: this framework's adapter cannot time runs")
    values, element_bytes = fit_of(kernel, bound, prepared)
    return TuningCall(
        key=tuning_key(bound, positional),
        values=values,
        element_bytes=element_bytes,
        job=job,
        launch=launch,
        timer=reads.timer,
        restores=restores(kernel, reads, bound),
        capturing=reads.capturing,
        in_process=bool(kernel.injected),
    )


def fit_of(kernel: LaunchTarget, bound: BoundCall, prepared: Any) -> tuple[dict[str, int], int]:
    """What says whether a configuration fits this call (:func:`nt_triton._tuning.fits`):
    its constexpr sizes (the host-computed ones that are plain ints) and the widest
    element among its tensors, in bytes."""
    host = kernel.signature.host
    values = {p.name: v for p, v in zip(host, prepared.arguments) if p.constexpr and type(v) is int}
    return values, max((itemsize(t.dtype) for t in bound.tensors), default=2)


def restores(kernel: LaunchTarget, reads: HostReads, bound: BoundCall) -> list[Callable[[], None]]:
    """Snapshots of what tuning runs would overwrite: written parameters that are also
    read, or whose memory another argument overlaps."""
    snapshot = reads.snapshot
    if snapshot is None:
        return []
    names = [p.name for p in kernel.spec.tensor_parameters]
    written = set(kernel.outputs)
    read = set(kernel.inputs)
    spans = [_span(info) for info in bound.tensors]
    saved = []
    for index, name in enumerate(names):
        if name not in written:
            continue
        start, end = spans[index]
        overlapped = any(
            other != index and spans[other][0] < end and start < spans[other][1]
            for other in range(len(names))
        )
        if name in read or overlapped:
            saved.append(snapshot(bound.tensor_arguments[index]))
    return saved


def itemsize(dtype: str) -> int:
    """Bytes per element of a canonical dtype name (``"float16"`` -> 2)."""
    digits = re.findall(r"\d+", dtype)
    return max(1, int(digits[0]) // 8) if digits else 1


def _span(info: Any) -> tuple[int, int]:
    """The bytes a tensor's elements cover: ``[start, end)``."""
    if any(size == 0 for size in info.shape):
        return (info.data_ptr, info.data_ptr)
    extent = sum((size - 1) * abs(stride) for size, stride in zip(info.shape, info.strides))
    return (info.data_ptr, info.data_ptr + (extent + 1) * itemsize(info.dtype))
