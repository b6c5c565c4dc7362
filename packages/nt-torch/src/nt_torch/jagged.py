"""Jagged parameters on PyTorch: nested tensors (``layout=torch.jagged``) as arguments.

A jagged parameter (``Tensor(ndim, jagged_dim=d)``) takes a nested tensor
whose ragged dimension is ``d``.  It is described to the backend with the
longest entry's length as the size of dimension ``d`` and stride 0 along the
batch (its entries start at their offsets), and handed over as
``(values, offsets, extent)``; see :mod:`ninetoothed.arrangement._jagged` for the kernel's
side.  Every other parameter must be a dense tensor, and jagged parameters
whose lengths shape the grid or are tied to one another must have the same
offsets (:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.jagged_groups`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import torch

from ninetoothed.arrangement.dtype import name_of
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.binding import BoundCall, bind_call
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.spec.kernel_spec import KernelSpec
from ninetoothed.spec.parameter import ParameterCheck


def bind(
    spec: KernelSpec,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    recognizes: Callable[[object], bool],
    describe: Callable[[Any], TensorInfo],
) -> BoundCall:
    """Check a call of a kernel with jagged parameters, describe it, pair values with offsets."""
    jagged: dict[int, tuple[str, Any]] = {}
    for check, argument in zip(spec.call_checks, args):
        if not check.is_scalar and isinstance(argument, torch.Tensor):
            if _check_argument(spec.label, check, argument):
                jagged[id(argument)] = (check.name, argument)
    # Before the sizes are compared: the longest entries may agree where the offsets do not.
    given = dict(jagged.values())
    for group in spec.jagged_groups:
        _check_same_offsets(spec.label, [(name, given[name]) for name in group if name in given])

    def described(obj: Any) -> TensorInfo:
        return _describe(obj) if id(obj) in jagged else describe(obj)

    bound = bind_call(
        spec, args, kwargs, framework="torch", recognizes=recognizes, describe=described
    )
    arguments = [
        (a.values(), a.offsets(), _extent(a.values())) if id(a) in jagged else a
        for a in bound.tensor_arguments
    ]
    return bound._replace(tensor_arguments=arguments)


def _check_argument(kernel_name: str, check: ParameterCheck, argument: torch.Tensor) -> bool:
    """Whether ``argument`` is a fitting nested tensor for a jagged parameter; raise if it
    does not fit its parameter (nested for a dense one, dense for a jagged one)."""
    nested = argument.is_nested
    if check.jagged_dim is None:
        if nested:
            raise LaunchError(
                f"{kernel_name}: parameter {check.name!r} is not jagged, got a nested tensor; "
                "declare it Tensor(..., jagged_dim=d) or pass a dense tensor"
            )
        return False
    expected = (
        f"{kernel_name}: parameter {check.name!r} is jagged (Tensor(jagged_dim="
        f"{check.jagged_dim})) and expects a torch nested tensor with layout=torch.jagged"
    )
    if not nested:
        raise LaunchError(f"{expected}, got a dense tensor of shape {tuple(argument.shape)}")
    if argument.layout != torch.jagged:
        raise LaunchError(f"{expected}, got a nested tensor of layout {argument.layout}")
    ragged = cast(Any, argument)._ragged_idx  # torch's NestedTensor; typed as a Tensor
    if ragged != check.jagged_dim:
        raise LaunchError(
            f"{expected} ragged in dimension {check.jagged_dim}, got one ragged in {ragged}"
        )
    return True


def _describe(argument: Any) -> TensorInfo:
    """A nested tensor described as the dense tensor its kernel sees (see the module docstring)."""
    values = argument.values()
    ragged = argument._ragged_idx
    lengths = argument.offsets().diff()
    longest = int(lengths.max()) if lengths.numel() else 0
    shape = (lengths.numel(),) + tuple(
        longest if dim == ragged - 1 else size for dim, size in enumerate(values.shape)
    )
    device = values.device
    name = f"cuda:{device.index}" if device.type == "cuda" else str(device)
    return TensorInfo(shape, (0, *values.stride()), name_of(values.dtype), name, values.data_ptr())


def _extent(values: torch.Tensor) -> int:
    """One past the largest element offset of ``values`` (0 when it is empty)."""
    if values.numel() == 0:
        return 0
    return 1 + sum((size - 1) * abs(stride) for size, stride in zip(values.shape, values.stride()))


def _check_same_offsets(kernel_name: str, arguments: list[tuple[str, Any]]) -> None:
    """Jagged parameters of one group must have the same offsets (entry lengths)."""
    if not arguments:
        return
    first_name, first = arguments[0]
    for name, other in arguments[1:]:
        left, right = first.offsets(), other.offsets()
        if left is right or (left.shape == right.shape and torch.equal(left, right.to(left))):
            continue
        raise LaunchError(
            f"{kernel_name}: the jagged parameters {first_name!r} and {name!r} have different "
            f"offsets (entry lengths {left.diff().tolist()} and {right.diff().tolist()}); every "
            "jagged parameter of one call must have the same entry lengths"
        )
