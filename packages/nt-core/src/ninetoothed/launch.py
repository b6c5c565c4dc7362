"""Binding a kernel call's arguments to its parameters, with clear errors.

Every framework adapter runs the same checks, so they live here: argument
count, which arguments are tensors and which scalars, ranks, declared sizes
and dtypes, device agreement, and the keyword arguments that give constexpr
and run-time symbols (or pin meta symbols, skipping auto-tuning).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.hookspecs import TensorInfo
from ninetoothed.spec import KernelSpec


@dataclass(frozen=True)
class BoundCall:
    """A validated call: per-tensor descriptions and every keyword value."""

    tensors: list[TensorInfo]
    """One per tensor parameter, in parameter order."""

    tensor_arguments: list[Any]
    """The host tensors, in the same order."""

    scalars: dict[str, Any]
    """Scalar parameters, constexpr/run-time symbols, and pinned meta symbols."""

    device: str


def bind_call(
    spec: KernelSpec,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    framework: str,
    recognizes: Callable[[object], bool],
    describe: Callable[[Any], TensorInfo],
) -> BoundCall:
    """Check a call against ``spec`` and describe its tensors.

    Raises :class:`LaunchError` naming the parameter and what was expected.
    """
    parameters = spec.parameters
    if len(args) != len(parameters):
        expected = ", ".join(p.name for p in parameters)
        raise LaunchError(
            f"{spec.name} takes {len(parameters)} positional arguments ({expected}), "
            f"got {len(args)}"
        )
    tensors: list[TensorInfo] = []
    tensor_arguments: list[Any] = []
    scalars: dict[str, Any] = {}
    device: str | None = None
    first_device_parameter = ""
    for parameter, argument in zip(parameters, args):
        if parameter.is_scalar:
            if parameter.source.value is not None and argument is not None:
                raise LaunchError(
                    f"{spec.name}: parameter {parameter.name!r} is fixed at make time to "
                    f"{parameter.source.value!r}; pass None for it"
                )
            if recognizes(argument):
                raise LaunchError(
                    f"{spec.name}: parameter {parameter.name!r} is a scalar (Tensor(0)), "
                    f"got a {framework} tensor; pass a Python number"
                )
            if not isinstance(argument, (int, float, bool)) and argument is not None:
                raise LaunchError(
                    f"{spec.name}: parameter {parameter.name!r} is a scalar (Tensor(0)), got "
                    f"{type(argument).__name__} {argument!r}"
                )
            scalars[parameter.name] = (
                parameter.source.value if parameter.source.value is not None else argument
            )
            continue
        if not recognizes(argument):
            kind = type(argument)
            raise LaunchError(
                f"{spec.name}: parameter {parameter.name!r} expects a {framework} tensor of "
                f"{parameter.source.ndim} dimensions, got {kind.__module__}.{kind.__qualname__}"
                " (all tensor arguments of one call must come from one framework)"
            )
        info = describe(argument)
        source = parameter.source
        if len(info.shape) != source.ndim:
            raise LaunchError(
                f"{spec.name}: parameter {parameter.name!r} expects {source.ndim} dimensions, "
                f"got a tensor of shape {info.shape} ({len(info.shape)} dimensions)"
            )
        for dim, size in enumerate(source.shape):
            if isinstance(size, int) and info.shape[dim] != size:
                raise LaunchError(
                    f"{spec.name}: parameter {parameter.name!r} expects size {size} in "
                    f"dimension {dim}, got shape {info.shape}"
                )
        declared = source.dtype
        if declared is not None and getattr(declared, "name", declared) != info.dtype:
            raise LaunchError(
                f"{spec.name}: parameter {parameter.name!r} expects dtype "
                f"{getattr(declared, 'name', declared)}, got {info.dtype}"
            )
        if device is None:
            device, first_device_parameter = info.device, parameter.name
        elif info.device != device:
            raise LaunchError(
                f"{spec.name}: all tensors must be on one device; {first_device_parameter!r} is "
                f"on {device} but {parameter.name!r} is on {info.device}"
            )
        tensors.append(info)
        tensor_arguments.append(argument)

    symbol_kinds = {
        **{name: "meta" for name in spec.meta_symbols},
        **{name: "constexpr" for name in spec.constexpr_symbols},
        **{name: "runtime" for name in spec.runtime_symbols},
    }
    for name, value in kwargs.items():
        if name not in symbol_kinds:
            known = ", ".join(sorted(symbol_kinds)) or "none"
            raise LaunchError(
                f"{spec.name}: unexpected keyword argument {name!r} (symbols it takes: {known})"
            )
        if not isinstance(value, (int, float, bool)):
            raise LaunchError(
                f"{spec.name}: symbol {name!r} must be given a number, got "
                f"{type(value).__name__} {value!r}"
            )
        if symbol_kinds[name] == "meta" and not _is_power_of_two(value):
            raise LaunchError(
                f"{spec.name}: meta symbol {name!r} takes powers of two (tiles are powers of "
                f"two), got {value!r}"
            )
        scalars[name] = value
    missing = [
        name
        for name, kind in symbol_kinds.items()
        if kind in ("constexpr", "runtime") and name not in kwargs
    ]
    if missing:
        raise LaunchError(
            f"{spec.name}: missing keyword argument(s) {', '.join(sorted(missing))}: "
            "constexpr and run-time symbols are given at call time, e.g. "
            f"{spec.name}(..., {sorted(missing)[0]}=...)"
        )
    return BoundCall(tensors, tensor_arguments, scalars, device or "cpu")


def _is_power_of_two(value: object) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value > 0
        and value & (value - 1) == 0
    )
