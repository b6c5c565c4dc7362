"""Issue 11, item 5: what used to fail raw or silently now works or names its cause.

Under Triton's interpreter, on every framework: a kernel made before
``TRITON_INTERPRET=1`` was set runs interpreted; ``libdevice`` functions run
under the interpreter (or an error names the function); an integer tensor
given to a float operation names the parameter; ``bool + bool`` is the
framework's logical or.
"""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor, block_size
from ninetoothed.errors import LaunchError

pytestmark = pytest.mark.interpreter_only

RNG = np.random.default_rng()
BLOCK_SIZE = block_size()


def unary(x, y):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def binary(x, y, z):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def add_one(x, y):
    y = x + 1.5  # noqa: F841


def test_interpreter_switched_on_after_make(framework, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")  # "GPU mode" when the kernel is made
    kernel = ninetoothed.make(unary, add_one, (Tensor(1), Tensor(1)))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = RNG.standard_normal(37).astype("float32")
    args = [framework.from_numpy(x), framework.poisoned((37,), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    np.testing.assert_allclose(y, x + 1.5, rtol=1e-6)


def libdevice_exp(x, y):
    y = ntl.libdevice.exp(x)  # noqa: F841


def libdevice_tanh(x, y):
    y = ntl.libdevice.tanh(x)  # noqa: F841


def libdevice_erf(x, y):
    y = ntl.libdevice.erf(x)  # noqa: F841


def libdevice_rsqrt(x, y):
    y = ntl.libdevice.rsqrt(ntl.abs(x) + 0.5)  # noqa: F841


def libdevice_rounding(x, y):
    y = ntl.libdevice.floor(x) + 2 * ntl.libdevice.ceil(x) + 4 * ntl.libdevice.round(x)  # noqa: F841


def libdevice_trigonometry(x, y):
    y = ntl.libdevice.sin(x) * ntl.libdevice.cos(x) + ntl.libdevice.log(ntl.abs(x) + 1.0)  # noqa: F841


def libdevice_pow(x, y, z):
    z = ntl.libdevice.pow(ntl.abs(x), y) + ntl.libdevice.sqrt(ntl.libdevice.pow(ntl.abs(y), 2.0))  # noqa: F841


def _round(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _erf(x):
    import math

    return np.vectorize(math.erf)(x)


LIBDEVICE_CASES = {
    "exp": (libdevice_exp, np.exp),
    "tanh": (libdevice_tanh, np.tanh),
    "erf": (libdevice_erf, _erf),
    "rsqrt": (libdevice_rsqrt, lambda x: 1 / np.sqrt(np.abs(x) + 0.5)),
    "floor, ceil, round": (
        libdevice_rounding,
        lambda x: np.floor(x) + 2 * np.ceil(x) + 4 * _round(x),
    ),
    "sin, cos, log": (
        libdevice_trigonometry,
        lambda x: np.sin(x) * np.cos(x) + np.log1p(np.abs(x)),
    ),
}
KERNELS: dict[str, ninetoothed.Kernel] = {}


def made(name, application, arity=2):
    if name not in KERNELS:
        tensors = tuple(Tensor(1) for _ in range(arity))
        KERNELS[name] = ninetoothed.make(binary if arity == 3 else unary, application, tensors)
    return KERNELS[name]


@pytest.mark.parametrize("case", sorted(LIBDEVICE_CASES))
def test_libdevice_under_the_interpreter(framework, case):
    application, reference = LIBDEVICE_CASES[case]
    x = (RNG.standard_normal(45) * 2).astype("float32")
    x[:4] = [0.5, -0.5, 1.5, -2.5]  # ties: libdevice rounds half away from zero
    args = [framework.from_numpy(x), framework.poisoned((45,), "float32")]
    (y,) = framework.call(made(case, application), args, {}, outputs=[1])
    np.testing.assert_allclose(y, reference(x.astype(np.float64)), rtol=2e-6, atol=1e-6)


def test_libdevice_pow_of_tiles_and_numbers(framework):
    x, y = (RNG.standard_normal((2, 30)) * 2).astype("float32")
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((30,), "float32")]
    (z,) = framework.call(made("pow", libdevice_pow, 3), args, {}, outputs=[2])
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(z, np.abs(x64) ** y64 + np.abs(y64), rtol=1e-5)


def libdevice_unknown(x, y):
    y = ntl.libdevice.j0(x)  # noqa: F841 - Bessel: a GPU has it, the interpreter does not


def test_libdevice_without_an_interpreter_version_is_named(framework, monkeypatch):
    monkeypatch.setenv("NINETOOTHED_GPU_CHECK", "0")
    kernel = made("j0", libdevice_unknown)
    args = [framework.from_numpy(np.ones(8, "float32")), framework.poisoned((8,), "float32")]
    with pytest.raises(Exception, match=r"libdevice\.j0 has no implementation under Triton's"):
        framework.call(kernel, args, {}, outputs=[1])


def test_libdevice_of_an_integer_tile_names_the_parameter(framework):
    args = [framework.from_numpy(np.arange(8, dtype=np.int32)), framework.poisoned((8,), "float32")]
    with pytest.raises(LaunchError, match=r"parameter 'x' is int32.*libdevice\.exp"):
        framework.call(made("exp", libdevice_exp), args, {}, outputs=[1])


def exp(x, y):
    y = ntl.exp(x)  # noqa: F841


def test_an_integer_tensor_where_floats_are_needed_names_the_parameter(framework):
    args = [framework.from_numpy(np.arange(8, dtype=np.int32)), framework.poisoned((8,), "float32")]
    # ntl.exp is the generated module's ninetoothed_exp (float16 promoted, see
    # tests/upstream/test_math_promotion.py), which hands an int32 tile to tl.exp.
    with pytest.raises(LaunchError, match=r"parameter 'x' is int32.* but got int32.*_exp\("):
        framework.call(made("ntl.exp", exp), args, {}, outputs=[1])


def bool_add(x, y, z):
    z = x + y  # noqa: F841


def bool_add_in_place(x, y, z):
    total = x
    total += y
    z = total  # noqa: F841


BOOL_KERNELS = {
    "x + y": ninetoothed.make(binary, bool_add, (Tensor(1), Tensor(1), Tensor(1))),
    "total += y": ninetoothed.make(binary, bool_add_in_place, (Tensor(1), Tensor(1), Tensor(1))),
}


@pytest.mark.parametrize("spelling", sorted(BOOL_KERNELS))
def test_bool_plus_bool_is_the_frameworks_logical_or(framework, spelling):
    x, y = RNG.random((2, 37)) < 0.5
    x[:4], y[:4] = [True, True, False, False], [True, False, True, False]
    args = [framework.from_numpy(x), framework.from_numpy(y)]
    expected = framework.to_numpy(args[0] + args[1])  # the framework's own bool + bool
    np.testing.assert_array_equal(expected, x | y)
    args.append(framework.from_numpy(np.zeros(37, bool)))
    (z,) = framework.call(BOOL_KERNELS[spelling], args, {}, outputs=[2])
    np.testing.assert_array_equal(z, expected)


def test_numbers_still_add(framework):
    x, y = RNG.integers(-50, 50, (2, 37)).astype(np.int32)
    args = [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((37,), "int32")]
    (z,) = framework.call(BOOL_KERNELS["x + y"], args, {}, outputs=[2])
    np.testing.assert_array_equal(z, x + y)
