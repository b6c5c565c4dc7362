"""The numpy adapter (``support.numpy_adapter``), written against the public contract only,
runs the seed documents' kernels (``support.tutorial``) with correct results.

Each kernel runs on fresh random arrays, outputs poisoned with NaN first,
against a float64 reference computed with numpy, with small tiles pinned so
that every grid dimension has several programs (under the interpreter an
unpinned kernel takes its first configuration), and on edge shapes: a size
of 1, sizes that are not multiples of the tile, strided views, empty arrays.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from support import numpy_adapter
from support.tutorial import add, elementwise, matmul, softmax

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import AdapterNotFoundError, LaunchError
from ninetoothed.runtime import plugins

pytestmark = pytest.mark.interpreter_only  # numpy arrays live in host memory

RNG = np.random.default_rng(20260)


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    """The numpy adapter, registered by hand for each test (it is not installed)."""
    plugins.register(numpy_adapter, name="numpy")
    try:
        yield
    finally:
        plugins.unregister("numpy")


def data(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def poisoned(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.full(shape, np.nan, dtype=dtype)


@pytest.mark.parametrize("size", [1, 100, 1000])
@pytest.mark.parametrize(
    ("launch", "pin"),
    [
        (add.kernel, {"BLOCK_SIZE": 16}),  # make style, tuned block size pinned
        (add.add_kernel, {"BLOCK_SIZE": 32}),  # jit style
        (add.constexpr_kernel, {"BLOCK_SIZE": 64}),  # a constexpr block size
    ],
)
def test_vector_addition(launch: ninetoothed.Kernel, pin: dict[str, int], size: int) -> None:
    x, y, z = data(size), data(size), poisoned(size)
    assert launch(x, y, z, **pin) is None
    np.testing.assert_allclose(z, x.astype(np.float64) + y, rtol=1e-6)


def test_vector_addition_honours_strides_and_takes_empty_arrays() -> None:
    base, y = data(2 * 37 + 1), data(37)
    x = base[::2][:37]  # a strided view
    out = poisoned(3 * 37)[::3]  # a strided output: the gaps stay NaN
    add.kernel(x, y, out, BLOCK_SIZE=8)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    whole = out.base
    assert whole is not None and np.isnan(whole[1::3]).all(), "wrote outside the view"
    empty = np.zeros(0, dtype=np.float32)
    add.kernel(empty, empty, np.zeros(0, dtype=np.float32), BLOCK_SIZE=8)


def pinned(kernel: ninetoothed.Kernel, size: int) -> dict[str, int]:
    """Every meta symbol of ``kernel`` (``block_size()`` names its own) pinned to ``size``."""
    return dict.fromkeys(kernel.spec.meta_symbols, size)


def test_arrays_dlpack_cannot_share_run_on_copies() -> None:
    """A read-only input and outputs of another byte order reach the interpreter as copies;
    what the kernel writes is copied back into the caller's arrays."""
    x, y = data(50), data(50)
    x.flags.writeable = False
    swapped = poisoned(50).astype(">f4")
    add.kernel(x, y, swapped, BLOCK_SIZE=16)
    np.testing.assert_allclose(swapped, x.astype(np.float64) + y, rtol=1e-6)


def test_arrays_kernels_cannot_take_are_refused_by_name() -> None:
    x, y = data(50), data(50)
    frozen = poisoned(50)
    frozen.flags.writeable = False
    with pytest.raises(LaunchError, match="'z' is written by the kernel, but its numpy array"):
        add.kernel(x, y, frozen, BLOCK_SIZE=16)
    with pytest.raises(LaunchError, match=r"strides \(-4,\)"):
        add.kernel(x, y, poisoned(50)[::-1], BLOCK_SIZE=16)


def test_a_scalar_parameter_and_an_inlined_helper() -> None:
    x, y = data(300), poisoned(300)
    elementwise.scale_kernel(x, 2.5, y, **pinned(elementwise.scale_kernel, 64))
    np.testing.assert_allclose(y, 2.5 * x.astype(np.float64), rtol=1e-6)
    y = poisoned(300)
    elementwise.silu_kernel(x, y, **pinned(elementwise.silu_kernel, 64))
    wide = x.astype(np.float64)
    np.testing.assert_allclose(y, wide / (1 + np.exp(-wide)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1), (33, 70), (64, 16)])
def test_a_two_dimensional_grid_copies_every_element(shape: tuple[int, int]) -> None:
    copy = elementwise.copy_2d_kernel
    x, y = data(*shape), poisoned(*shape)
    copy(x, y, **pinned(copy, 16))
    np.testing.assert_array_equal(y, x)
    transposed, y = data(shape[1], shape[0]).T, poisoned(*shape)  # a non-contiguous input
    copy(transposed, y, **pinned(copy, 16))
    np.testing.assert_array_equal(y, transposed)


@pytest.mark.parametrize("shape", [(1, 1), (7, 50), (20, 64)])
def test_softmax_rows(shape: tuple[int, int]) -> None:
    x, y = data(*shape), poisoned(*shape)
    softmax.kernel(x, y, BLOCK_SIZE=64)  # one row per program: several programs
    wide = x.astype(np.float64)
    expected = np.exp(wide - wide.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (40, 36, 24), (64, 32, 48)])
def test_matrix_multiplication(m: int, n: int, k: int) -> None:
    a, b, c = data(m, k), data(k, n), poisoned(m, n)
    matmul.kernel(a, b, c, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    reference = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, reference, rtol=1e-4, atol=1e-4)
    half = poisoned(m, n, dtype=np.float16)
    matmul.matmul_kernel(
        a.astype(np.float16), b.astype(np.float16), half,
        BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16,
    )  # fmt: skip
    np.testing.assert_allclose(half, reference, rtol=2e-2, atol=2e-2)


def test_the_kernel_library_on_numpy_arrays() -> None:
    ops = numpy_adapter.ops_module()
    a, b = data(30, 20), data(20, 50)
    np.testing.assert_allclose(ops.mm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    x = data(9, 33)
    wide = x.astype(np.float64)
    expected = np.exp(wide - wide.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(
        ops.softmax(x), expected / expected.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7
    )
    assert ops.mm.__module__ == "numpy_ops"


def test_bad_input_is_named() -> None:
    x, y = data(100), data(100)
    with pytest.raises(LaunchError, match="'z'"):
        add.kernel(x, y, poisoned(99), BLOCK_SIZE=16)
    with pytest.raises(LaunchError, match="binds no autodiff"):
        ninetoothed.functional(add.kernel)(x, y)


def test_without_the_plugin_numpy_arrays_find_no_adapter() -> None:
    kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1), Tensor(1), Tensor(1)))
    plugins.unregister("numpy")
    try:
        with pytest.raises(AdapterNotFoundError, match="numpy.ndarray"):
            kernel(data(4), data(4), poisoned(4), BLOCK_SIZE=4)
    finally:
        plugins.register(numpy_adapter, name="numpy")
