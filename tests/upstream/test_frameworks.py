"""Issue 10's bugs, regression-tested on every framework (torch, paddle, jax).

The other files here run upstream's programs on torch, as upstream does;
these run the same fixes through each framework's adapter: an untiled
arrangement, upstream's one-dimensional ``x.offsets(dim)`` (with unequal
tiles, so a tile-rank result could not broadcast) and ``x.offsets()``, and
masked loads of float8 tensors (no ``other=0`` that Triton cannot cast).
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

RNG = np.random.default_rng()

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"
"""Where the torch-only tests put their tensors (``nox -s gpu`` sets NT_TEST_GPU)."""


def unchanged(x, y):
    return x, y


def copy(x, y):
    y = x  # noqa: F841


def test_untiled_copy_runs_one_element_per_program(framework):
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    kernel = ninetoothed.make(unchanged, copy, (Tensor(2), Tensor(2)))
    args = [framework.from_numpy(x), framework.poisoned((5, 7), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, x)


def tiles(x, y, BLOCK_SIZE_M, BLOCK_SIZE_N):
    return x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), y.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))


def outer_offsets(x, y):
    # Upstream's meaning: 1-D along each source dimension, broadcast by hand.
    y = x.offsets(0)[:, None] * 1000 + x.offsets(1)[None, :]  # noqa: F841


def memory_offsets(x, y):
    y = x.offsets()  # noqa: F841


@pytest.mark.parametrize("blocks", [(4, 8), (8, 4), (4, 4)])
def test_offsets_of_a_dimension_are_one_dimensional(framework, blocks):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1])
    kernel = ninetoothed.make(arrangement, outer_offsets, (Tensor(2), Tensor(2)))
    shape = (13, 10)  # several programs per dimension, ragged edges
    x = RNG.standard_normal(shape).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned(shape, "int64")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    rows, columns = np.indices(shape)
    np.testing.assert_array_equal(y, rows * 1000 + columns)


def test_offsets_without_a_dimension_follow_the_strides(framework):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=4, BLOCK_SIZE_N=8)
    kernel = ninetoothed.make(arrangement, memory_offsets, (Tensor(2), Tensor(2)))
    shape = (9, 11)
    x = framework.non_contiguous(RNG.standard_normal(shape).astype(np.float32))
    args = [x, framework.poisoned(shape, "int64")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    strides = _element_strides(x, shape)
    rows, columns = np.indices(shape)
    np.testing.assert_array_equal(y, rows * strides[0] + columns * strides[1])


def _element_strides(x, shape):
    """``x``'s strides in elements (JAX arrays are row-major)."""
    if hasattr(x, "stride") and callable(x.stride):
        return tuple(x.stride(d) for d in range(len(shape)))
    return (shape[1], 1)


def test_masked_float8_loads_need_no_int_other():
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=4, BLOCK_SIZE_N=8)
    kernel = ninetoothed.make(arrangement, copy, (Tensor(2), Tensor(2)))
    x = torch.randn(9, 13, device=DEVICE).to(torch.float8_e5m2)
    y = torch.full((9, 13), float("nan"), device=DEVICE).to(torch.float8_e5m2)
    kernel(x, y)
    torch.testing.assert_close(y.float(), x.float(), rtol=0, atol=0)


def gather(x, y):
    y = x.source[x.offsets(0)[:, None], x.offsets(1)[None, :]]  # noqa: F841


def by_pointer(x, y):
    y = ntl.load(  # noqa: F841
        x.source.data_ptr()
        + x.offsets(0)[:, None] * x.source.stride(0)
        + x.offsets(1)[None, :] * x.source.stride(-1)
    )


def scatter_transposed(x, y):
    y.source[x.offsets(1)[None, :], x.offsets(0)[:, None]] = x


@pytest.mark.parametrize("application", [gather, by_pointer])
def test_reading_through_the_source(framework, application):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=8, BLOCK_SIZE_N=4)
    kernel = ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = RNG.standard_normal((19, 10)).astype(np.float32)
    args = [framework.non_contiguous(x), framework.poisoned((19, 10), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, x)


def test_scattering_into_the_source(framework):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=8, BLOCK_SIZE_N=4)
    kernel = ninetoothed.make(arrangement, scatter_transposed, (Tensor(2), Tensor(2)))
    x = RNG.standard_normal((19, 10)).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((10, 19), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    np.testing.assert_array_equal(y, x.T)


def one_index(x, y):
    y = x.source[x.offsets(0)]  # noqa: F841


def stride_of_a_variable(x, y):
    d = 0
    y = ntl.load(x.source.data_ptr() + x.source.stride(d))  # noqa: F841


def stride_out_of_range(x, y):
    y = ntl.load(x.source.data_ptr() + x.source.stride(2))  # noqa: F841


@pytest.mark.parametrize(
    "application, pattern",
    [
        (one_index, r"x.source\[...\] needs 2 index expression\(s\).*got x.offsets\(0\)"),
        (stride_of_a_variable, r"stride takes one integer constant, the dim"),
        (stride_out_of_range, r"x.source has 2 dimensions, no dimension 2"),
    ],
)
def test_bad_source_access_is_refused_at_make(application, pattern):
    arrangement = functools.partial(tiles, BLOCK_SIZE_M=8, BLOCK_SIZE_N=4)
    with pytest.raises(ninetoothed.errors.CodegenError, match=pattern):
        ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2)))


def row_of_a_matrix(x, row, output):
    tile_shape = (4, 8)
    return (
        x.tile(tile_shape),
        row.expand((x.shape[0], -1)).tile(tile_shape),
        output.tile(tile_shape),
    )


def add(x, row, output):
    output = x + row  # noqa: F841


def test_expanding_a_size_that_is_one_at_run_time(framework):
    kernel = ninetoothed.make(row_of_a_matrix, add, (Tensor(2), Tensor(2), Tensor(2)))
    x = RNG.standard_normal((13, 19)).astype(np.float32)
    row = RNG.standard_normal((1, 19)).astype(np.float32)
    args = [framework.from_numpy(x), framework.from_numpy(row)]
    args.append(framework.poisoned((13, 19), "float32"))
    (output,) = framework.call(kernel, args, {}, outputs=[2])
    np.testing.assert_allclose(output, x + row, rtol=1e-6)


def test_expanding_a_size_that_is_not_one_fails_at_launch():
    kernel = ninetoothed.make(row_of_a_matrix, add, (Tensor(2), Tensor(2), Tensor(2)))
    x, row = torch.randn(13, 19, device=DEVICE), torch.randn(2, 19, device=DEVICE)
    pattern = r"expand on .*: dimension 0 must have size 1 \(or 0\).*got 2"
    with pytest.raises(ninetoothed.errors.LaunchError, match=pattern):
        kernel(x, row, torch.empty_like(x))


def first_halves(x, y):
    x_arranged, y_arranged = x.tile((8,)), y.tile((8,))
    x_arranged.dtype.shape = (4,)  # each program reads the first 4 of its 8
    y_arranged.dtype.shape = (4,)
    return x_arranged, y_arranged


def two_programs(x, y):
    x_arranged, y_arranged = x.tile((8,)), y.tile((8,))
    x_arranged.shape = (2,)  # the grid: only the first two tiles
    y_arranged.shape = (2,)
    return x_arranged, y_arranged


@pytest.mark.parametrize("arrangement", [first_halves, two_programs])
def test_assigning_a_levels_shape(framework, arrangement):
    kernel = ninetoothed.make(arrangement, copy, (Tensor(1), Tensor(1)))
    x = RNG.standard_normal(37).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((37,), "float32")]
    (y,) = framework.call(kernel, args, {}, outputs=[1])
    positions = np.arange(37)
    written = positions % 8 < 4 if arrangement is first_halves else positions < 16
    np.testing.assert_array_equal(y[written], x[written])
    assert np.isnan(y[~written]).all()


def test_assigning_a_source_tensors_shape_declares_its_sizes():
    x = Tensor(1)
    x.shape = (4,)
    assert x.shape == (4,)
    with pytest.raises(ninetoothed.errors.MetaOperationError):
        x.shape = (4, 5)


@pytest.mark.parametrize("name", ["gather_kernel", "pointer_kernel"])
def test_the_examples_source_kernels(framework, name):
    from support.tutorial import upstream_style

    x = RNG.standard_normal((37, 21)).astype(np.float32)
    args = [framework.non_contiguous(x), framework.poisoned((37, 21), "float32")]
    (y,) = framework.call(getattr(upstream_style, name), args, {}, outputs=[1])
    np.testing.assert_array_equal(y, x)


def test_the_examples_untiled_kernel(framework):
    from support.tutorial import upstream_style

    x = RNG.standard_normal(23).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((23,), "float32")]
    (y,) = framework.call(upstream_style.untiled_kernel, args, {}, outputs=[1])
    np.testing.assert_array_equal(y[:-1], x[1:])
    assert np.isnan(y[-1])


WIDTH = Symbol("WIDTH", constexpr=True)


def rows(x, y):
    return x.tile((1, WIDTH)), y.tile((1, WIDTH))


def centre(x, y):
    # Upstream's x.shape is the declared size (WIDTH), not the padded extent.
    y = x - ntl.sum(x, 1)[:, None] / x.shape[-1]  # noqa: F841


@pytest.mark.parametrize("width", [100, 64, 3])
def test_a_tiles_shape_is_its_declared_size(framework, width):
    kernel = ninetoothed.make(rows, centre, (Tensor(2), Tensor(2)))
    x = RNG.standard_normal((5, width)).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((5, width), "float32")]
    (y,) = framework.call(kernel, args, {"WIDTH": width}, outputs=[1])
    np.testing.assert_allclose(y, x - x.mean(1, keepdims=True), rtol=1e-5, atol=1e-5)


def jagged_copy(input, output):
    return input.tile((1, 4, 4)), output.tile((1, 4, 4))


def test_a_jagged_parameter_names_itself_on_every_framework(framework):
    # torch takes nested tensors there (tests/upstream/test_jagged.py); paddle and jax
    # have none, so the parameter is refused by name rather than read as dense.
    kernel = ninetoothed.make(jagged_copy, copy, (Tensor(3, jagged_dim=1), Tensor(3)))
    x = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((2, 5, 4), "float32")]
    expected = {
        "torch": "expects a torch nested tensor with layout=torch.jagged, got a dense tensor",
        "paddle": "paddle has no nested tensors",
        "jax": "jax has no nested tensors",
    }
    with pytest.raises(ninetoothed.errors.LaunchError) as raised:
        framework.call(kernel, args, {}, outputs=[1])
    message = str(raised.value)
    assert "parameter 'x' is jagged (Tensor(jagged_dim=1))" in message
    assert expected[framework.name] in message
