"""Kernels staged under ``jax.jit`` on arrays placed over several devices, outside ``shard_map``.

A kernel launch is an opaque custom call (jax-triton) or callback to XLA: it
has no partitioning rule, so XLA's partitioner cannot split it over the
devices its operands are placed on.  Depending on the operands it gathers
them onto one device (correct, not parallel) or fails with an error of its
own about shardings it cannot convert.  A rule
(``jax.experimental.custom_partitioning``) could not be tested on the CPU:
a callback inside a custom partitioning (the interpreter's launch) crashes
the process (JAX 0.10).

So a kernel refuses, while it is traced, any operand whose type places it on
a mesh of several devices that ``shard_map`` does not manage (its axes are
not ``Manual``), naming the operand, the mesh and the sharding, and pointing
to ``shard_map``, which hands the kernel each device's shard.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from ninetoothed.errors import LaunchError

__all__ = ["refuse_partitioned"]


def refuse_partitioned(label: str, names: Sequence[str], args: Sequence[Any]) -> None:
    """Raise a :class:`LaunchError` if a traced argument is placed over several devices
    outside ``shard_map`` (``names``: the parameters, in the order of ``args``)."""
    for name, arg in zip(names, args):
        placement = _placement(arg)
        if placement is not None:
            raise LaunchError(
                f"{label}: under jax.jit, argument {name!r} is {placement}, outside "
                "shard_map; NineToothed kernels have no partitioning rule, so XLA cannot "
                "split a launch over devices. Call the kernel inside jax.shard_map, which "
                "gives it each device's shard (mesh axes in in_specs/out_specs), or put "
                "its arrays on one device"
            )


def _placement(arg: Any) -> str | None:
    """How ``arg`` (a tracer) is placed over several devices that ``shard_map`` does not
    manage, in words; None where it is not (one device, a manual axis, no tracer)."""
    if not isinstance(arg, jax.core.Tracer):
        return None
    sharding = getattr(getattr(arg, "aval", None), "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    shape = dict(getattr(mesh, "shape", {}) or {})
    manual = set(getattr(mesh, "manual_axes", ()) or ())
    free = {axis: size for axis, size in shape.items() if axis not in manual and size > 1}
    if not free:
        return None
    devices = 1
    for size in free.values():
        devices *= int(size)
    spec = getattr(sharding, "spec", None)
    named = spec is not None and any(entry is not None for entry in spec)
    how = f"sharded {spec}" if named else "its sharding left to XLA's partitioner"
    return f"placed over {devices} devices (mesh {free}, {how})"
