"""``libdevice`` under Triton's interpreter: the common functions, computed with numpy.

Triton's ``triton.language.extra.libdevice`` holds stubs that only the GPU
compiler resolves; the interpreter calls them as Python functions, which
return ``None`` (``'NoneType' object has no attribute 'dtype'`` follows).
When a kernel module is loaded for the interpreter, :mod:`nt_triton.cache._sources`
binds its ``libdevice`` name to :data:`LIBDEVICE` instead: the functions
listed here compute on the interpreter's numpy arrays, in the tiles' own
precision; any other name raises, naming the function.  The GPU front-end
check (:mod:`nt_triton._gpu_check`) sees the real module through
:attr:`InterpretedLibdevice.real`.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from nt_triton import _interpreted_bfloat16 as bfloat16

__all__ = ["FUNCTIONS", "InterpretedLibdevice", "LIBDEVICE"]


def _round(x: Any) -> Any:
    """libdevice's ``round``: half away from zero (numpy rounds half to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": _erf,
    "erfc": _erfc,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": _round,
    "rint": np.rint,
    "nearbyint": np.rint,
    "fabs": np.abs,
    "abs": np.abs,
    "pow": np.power,
    "atan2": np.arctan2,
    "fmod": np.fmod,
    "hypot": np.hypot,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "copysign": np.copysign,
    "fma": lambda x, y, z: x * y + z,
}
"""The libdevice functions the interpreter runs: floating-point in, the same type out."""


class InterpretedLibdevice(types.ModuleType):
    """Stands for ``triton.language.extra.libdevice`` in kernels run by the interpreter."""

    def __init__(self) -> None:
        super().__init__("nt_triton._interpreted_libdevice.LIBDEVICE", __doc__)

    @property
    def real(self) -> types.ModuleType:
        """Triton's own libdevice module (what a GPU compiles)."""
        from triton.language.extra import libdevice

        module: types.ModuleType = libdevice
        return module

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        function = FUNCTIONS.get(name)
        if function is None:
            raise NotImplementedError(
                f"libdevice.{name} has no implementation under Triton's interpreter "
                f"(TRITON_INTERPRET=1); those that have: {', '.join(sorted(FUNCTIONS))}. "
                "Run the kernel on a GPU, or use ninetoothed.language's equivalent"
            )
        return _elementwise(name, function)


def _elementwise(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` applied to the interpreter's tiles (and Python numbers), broadcast."""

    def apply(*args: Any) -> Any:
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        tensors = [arg for arg in args if isinstance(arg, tl.tensor)]
        if not tensors:
            raise TypeError(f"libdevice.{name} takes tiles; got {args!r}")
        dtype = tensors[0].dtype
        if not dtype.is_floating():
            raise TypeError(
                f"libdevice.{name} takes floating-point tiles, but got {dtype} "
                "(cast it first: ntl.cast(x, ntl.float32))"
            )
        values = [_value(arg) for arg in args]
        with np.errstate(all="ignore"):
            computed = function(*(np.asarray(v, dtype=np.float64) for v in values))
        shapes = [tuple(t.type.shape) for t in tensors if t.type.is_block()]
        shape = np.broadcast_shapes(*shapes) if shapes else np.shape(computed)
        computed = np.broadcast_to(computed, shape)
        kind = tensors[0].handle.data.dtype
        # bfloat16 tiles hold bits (uint16): rounded to them, not cast.
        data = bfloat16.narrow(computed) if dtype == tl.bfloat16 else computed.astype(kind)
        ty = tl.block_type(dtype, list(shape)) if shapes else dtype
        return tl.tensor(TensorHandle(data, dtype), ty)

    apply.__name__ = name
    return apply


def _value(arg: Any) -> Any:
    """A tile's values (bfloat16 widened from its bits), or a number's."""
    import triton.language as tl

    if not isinstance(arg, tl.tensor):
        return getattr(arg, "value", arg)
    data = arg.handle.data
    return bfloat16.widen(data) if arg.dtype == tl.bfloat16 else data


LIBDEVICE = InterpretedLibdevice()
"""The interpreter's libdevice (see the module's documentation)."""
