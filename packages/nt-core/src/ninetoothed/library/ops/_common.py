"""Checks and shape arithmetic the library's ops share.

Errors are :class:`~ninetoothed.errors.LaunchError` (a ``ValueError``) naming
the op and the argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.library.ops.framework import Framework
from ninetoothed.library.tiling import Pattern
from ninetoothed.runtime.hookspecs import TensorInfo

__all__ = [
    "FLOATS",
    "broadcast_shapes",
    "contiguous",
    "describe",
    "numel",
    "pair",
    "pattern",
    "rank",
    "warps_for_row",
]

FLOATS = ("float16", "bfloat16", "float32")
"""The dtypes every op supports."""


def describe(framework: Framework, op: str, **tensors: Any) -> dict[str, TensorInfo]:
    """Each named tensor's description; all must share one supported float dtype."""
    infos = {name: _describe(framework, op, name, tensor) for name, tensor in tensors.items()}
    dtypes = {info.dtype for info in infos.values()}
    if len(dtypes) != 1 or not dtypes <= set(FLOATS):
        found = ", ".join(f"{name} {info.dtype}" for name, info in infos.items())
        raise LaunchError(
            f"{op}: the tensors must share one dtype of {', '.join(FLOATS)}; got {found}"
        )
    return infos


def _describe(framework: Framework, op: str, name: str, tensor: Any) -> TensorInfo:
    """The framework's description of ``tensor``, or an error naming the argument."""
    try:
        return framework.describe(tensor)
    except (AttributeError, TypeError) as error:
        raise LaunchError(
            f"{op}: {name} must be a {framework.name} tensor, got {type(tensor).__name__}"
        ) from error


def rank(op: str, name: str, info: TensorInfo, expected: int) -> None:
    """``info`` has ``expected`` dimensions."""
    if len(info.shape) != expected:
        raise LaunchError(f"{op}: {name} must be {expected}-D, got shape {info.shape}")


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape the ``shapes`` broadcast to (NumPy's rules)."""
    ndim = max(len(shape) for shape in shapes)
    padded = [(1,) * (ndim - len(shape)) + tuple(shape) for shape in shapes]
    result = []
    for sizes in zip(*padded):
        # Compared, not put in a set: hashing a tracer's symbolic size (torch.compile
        # with dynamic shapes) would specialise the trace on its value.
        chosen = 1
        for size in sizes:
            if size != 1 and chosen != 1 and size != chosen:
                raise LaunchError(f"{op}: shapes {', '.join(map(str, shapes))} do not broadcast")
            if size != 1:
                chosen = size
        result.append(chosen)
    return tuple(result)


def pattern(shape: Sequence[int], output: Sequence[int]) -> Pattern:
    """The broadcast pattern of an input of ``shape`` against ``output`` (right-aligned)."""
    aligned = output[len(output) - len(shape) :]
    return tuple(1 if size == 1 and target != 1 else None for size, target in zip(shape, aligned))


def contiguous(info: TensorInfo) -> bool:
    """Whether the tensor is row-major and dense."""
    expected = 1
    for size, stride in zip(reversed(info.shape), reversed(info.strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def pair(op: str, name: str, value: int | Sequence[int]) -> tuple[int, int]:
    """A 2-D size given as one int or two."""
    values = (value, value) if isinstance(value, int) else tuple(value)
    if len(values) != 2 or not all(isinstance(v, int) and v >= 0 for v in values):
        raise LaunchError(f"{op}: {name} must be an int or two, got {value!r}")
    return (int(values[0]), int(values[1]))


def numel(shape: Sequence[int]) -> int:
    """The number of elements of ``shape``."""
    count = 1
    for size in shape:
        count *= size
    return count


def warps_for_row(length: int) -> int:
    """Warps for a program that holds a row of ``length`` elements: 4 up to 2048,
    then one more warp per 512 elements, at most 16."""
    padded = 1 << max(length - 1, 0).bit_length()
    return min(16, max(4, padded // 512))
