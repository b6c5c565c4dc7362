"""bfloat16 under Triton's interpreter: computed in float32, rounded once, as on a GPU.

numpy has no bfloat16, so Triton's interpreter holds bfloat16 tiles as their
raw bits (``uint16``) and hands those bits to numpy: ``x + y`` adds integers
(sums near 1e38), ``tl.dot`` multiplies them (products near 3e10 where 10 is
right), ``-x`` negates them, comparisons and ``tl.max`` order negative
numbers backwards, and float32 -> bfloat16 casts truncate.  While
:func:`patched` is active, the interpreter's builder widens bfloat16 operands
to float32 (exact), computes, and rounds each bfloat16 result to nearest,
ties to even (what a GPU's ``cvt.rn.bf16.f32`` does); reductions and scans
over bfloat16 tiles run on the widened values too.  Products accumulate in
float32 like a GPU's tensor cores.

The patches are instance attributes of Triton's one builder and a class
attribute of its reduction helper, installed for the duration of a launch and
removed after it (:mod:`nt_triton._interpreter` holds the launch lock around
them): Triton's own interpreter is left as it was for every other caller, and
GPU code generation never sees any of this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["narrow", "patched", "widen"]


def widen(bits: np.ndarray) -> np.ndarray:
    """float32 values of bfloat16 bits (exact: a bfloat16 is a float32's top half)."""
    widened: np.ndarray = (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(
        np.float32
    )
    return widened


def narrow(values: Any) -> np.ndarray:
    """bfloat16 bits of ``values`` (float32 or float64), rounded to nearest, ties to even.

    Values that round past the largest bfloat16 become infinities; NaN stays
    NaN (quiet, its sign kept).
    """
    values = np.asarray(values)
    single = _to_odd(values) if values.dtype == np.float64 else values.astype(np.float32)
    bits = single.view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit rounds half to even at bit 16.
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    quiet = ((bits >> 16) | 0x0040).astype(np.uint16)
    narrowed: np.ndarray = np.where(np.isnan(single), quiet, rounded)
    return narrowed


def _to_odd(values: np.ndarray) -> np.ndarray:
    """float64 values as float32, rounded to odd: an inexact result takes, of the two
    float32 values around it, the one with an odd last bit.  Rounding that to bfloat16
    then rounds the float64 value once (float32 keeps more than twice bfloat16's bits)."""
    with np.errstate(over="ignore"):
        nearest = values.astype(np.float32)
    inexact = (nearest != values) & np.isfinite(nearest)
    even = (nearest.view(np.uint32) & 1) == 0
    beyond = np.where(values > nearest, np.float32(np.inf), np.float32(-np.inf))
    odd: np.ndarray = np.where(inexact & even, np.nextafter(nearest, beyond), nearest)
    return odd


def _scalar_is(dtype: Any, name: str) -> bool:
    """Whether ``dtype`` (a Triton type, a tile's or a handle's) has elements of Triton's
    type ``name``."""
    import triton.language as tl

    return bool(getattr(dtype, "scalar", None) == getattr(tl, name))


def _bfloat16(dtype: Any) -> bool:
    return _scalar_is(dtype, "bfloat16")


def _values(handle: Any) -> np.ndarray:
    """A handle's values, bfloat16 widened to float32."""
    data: np.ndarray = handle.data
    return widen(data) if _bfloat16(handle.dtype) else data


def _result(handle_type: Any, output: np.ndarray, dtype: Any) -> Any:
    """A handle of ``dtype`` holding ``output``: bfloat16 bits where it is bfloat16 and
    ``output`` floating (comparisons keep their booleans)."""
    if _bfloat16(dtype) and np.issubdtype(output.dtype, np.floating):
        output = narrow(output)
    return handle_type(output, dtype)


def _binary_op(original: Callable[..., Any]) -> Callable[..., Any]:
    def binary_op(lhs: Any, rhs: Any, op: Callable[..., Any]) -> Any:
        if not (_bfloat16(lhs.dtype) or _bfloat16(rhs.dtype)):
            return original(lhs, rhs, op)
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN), as on a GPU
            output = np.asarray(op(_values(lhs), _values(rhs)))
        return _result(type(lhs), output, lhs.dtype.scalar)

    return binary_op


def _ternary_op(original: Callable[..., Any]) -> Callable[..., Any]:
    def ternary_op(lhs: Any, rhs: Any, other: Any, op: Callable[..., Any]) -> Any:
        # np.where picks bits, which is right for any type; clamps compare values.
        if op is np.where or not any(_bfloat16(h.dtype) for h in (lhs, rhs, other)):
            return original(lhs, rhs, other, op)
        output = np.asarray(op(_values(lhs), _values(rhs), _values(other)))
        return _result(type(other), output, other.dtype.scalar)

    return ternary_op


def _unary_op(original: Callable[..., Any]) -> Callable[..., Any]:
    def unary_op(arg: Any, op: Callable[..., Any]) -> Any:
        if not _bfloat16(arg.dtype):
            return original(arg, op)
        with np.errstate(all="ignore"):
            output = np.asarray(op(_values(arg)))
        return _result(type(arg), output, arg.dtype.scalar)

    return unary_op


def _fma(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_fma(x: Any, y: Any, z: Any) -> Any:
        if not any(_bfloat16(h.dtype) for h in (x, y, z)):
            return original(x, y, z)
        values = [_values(h).astype(np.float64) for h in (x, y, z)]
        output = values[0] * values[1] + values[2]  # rounded once, by narrow()
        return _result(type(z), output, z.dtype.scalar)

    return create_fma


def _dot(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_dot(a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
        if not any(_bfloat16(h.dtype) for h in (a, b, d)):
            return original(a, b, d, input_precision, max_num_imprecise_acc)
        accumulator = _values(d).astype(np.float32)
        output = np.matmul(_values(a), _values(b), dtype=np.float32) + accumulator
        return _result(type(d), output, d.dtype.scalar)

    return create_dot


def _cast(original: Callable[..., Any]) -> Callable[..., Any]:
    """Casts from and to bfloat16 through float32: widened exactly, narrowed to nearest even
    (Triton's own conversion truncates)."""

    def cast_impl(src: Any, dst_type: Any) -> Any:
        import triton.language as tl

        from_bfloat16, to_bfloat16 = _bfloat16(src.dtype), _bfloat16(dst_type)
        if from_bfloat16 == to_bfloat16:
            return original(src, dst_type)
        handle_type = type(src)
        if from_bfloat16:
            single = handle_type(widen(src.data), tl.float32)
            return single if dst_type.scalar == tl.float32 else original(single, dst_type)
        # float32 is rounded by bit operations alone; other types go through float64.
        single = src.dtype.scalar == tl.float32
        return handle_type(narrow(src.data if single else src.data.astype(np.float64)), tl.bfloat16)

    return cast_impl


_BUILDER_PATCHES: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "binary_op": _binary_op,
    "ternary_op": _ternary_op,
    "unary_op": _unary_op,
    "create_fma": _fma,
    "create_dot": _dot,
    "cast_impl": _cast,
}
"""The builder's methods that compute on tile values, and their bfloat16-aware wrappers
(every arithmetic, comparison and cast of Triton's builder goes through one of them)."""


def _reduction(original: Callable[..., Any]) -> Callable[..., Any]:
    """Reductions and scans (``tl.sum``, ``tl.max``, ``tl.cumsum``, custom combines) over
    widened bfloat16 tiles, their results rounded back."""

    def apply(self: Any, input: Any) -> Any:
        if not isinstance(input, tuple):
            return apply(self, (input,))[0]
        narrowed = [_bfloat16(tensor.dtype) for tensor in input]
        if not any(narrowed):
            return original(self, input)
        widened = tuple(_retyped(t, "float32") if n else t for t, n in zip(input, narrowed))
        results = original(self, widened)
        return tuple(
            _retyped(result, "bfloat16")
            if index < len(narrowed) and narrowed[index] and _scalar_is(result.dtype, "float32")
            else result
            for index, result in enumerate(results)
        )

    return apply


def _retyped(tensor: Any, name: str) -> Any:
    """``tensor`` (float32 or bfloat16) as the other one."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    dtype = getattr(tl, name)
    data = widen(tensor.handle.data) if name == "float32" else narrow(tensor.handle.data)
    shape = list(tensor.type.shape) if tensor.type.is_block() else None
    ty = tl.block_type(dtype, shape) if shape is not None else dtype
    return tl.core.tensor(TensorHandle(data, dtype), ty)


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """Triton's interpreter computing bfloat16 as a GPU does, for the duration of the block.

    Not thread-safe by itself: callers hold :data:`nt_triton._interpreter.LOCK`.
    """
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    reductions = interpreter.ReduceScanOpInterface
    own = vars(builder)
    saved = {name: own[name] for name in _BUILDER_PATCHES if name in own}
    apply = reductions.__dict__["apply"]
    for name, wrap in _BUILDER_PATCHES.items():
        setattr(builder, name, wrap(getattr(builder, name)))
    reductions.apply = _reduction(apply)
    try:
        yield
    finally:
        reductions.apply = apply
        for name in _BUILDER_PATCHES:
            if name in saved:
                setattr(builder, name, saved[name])
            else:
                delattr(builder, name)
