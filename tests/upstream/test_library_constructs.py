"""Constructs that operator libraries written for upstream use (found running ntops).

Each test is a minimal program of our own for one construct that a large
body of upstream kernels (InfiniTensor's ntops) relies on: an arrangement
that leaves some given tensors out, a constexpr scalar fixed at ``make`` and
passed again at the call, ``Tensor(dtype=int)``, indexing one element of a
tile with a run-time value, declaring a source tensor's sizes by assigning
``shape``, and ``x.data_ptr()`` of an arranged parameter.
"""

import functools
import os

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def rows_arrangement(x, scale, bias, cache, y, with_bias, BLOCK_SIZE=ninetoothed.block_size()):
    """Rows of ``x`` and ``y``; ``cache`` is given but left out (an unused KV cache)."""

    def rows(tensor):
        arranged = tensor.tile((1, BLOCK_SIZE))
        arranged.dtype = arranged.dtype.squeeze(0)
        return arranged

    return rows(x), scale, bias, rows(y), with_bias


def scale_rows(x, scale, bias, y, with_bias):
    if with_bias:
        y = x * scale + bias
    else:
        y = x * scale


def test_an_arrangement_may_leave_given_tensors_out():
    tensors = (Tensor(2), Tensor(0), Tensor(0), Tensor(2), Tensor(2), Tensor(0, constexpr=True))
    arrangement = functools.partial(rows_arrangement, BLOCK_SIZE=16)
    kernel = ninetoothed.make(arrangement, scale_rows, tensors)
    x = torch.randn(5, 37, device=DEVICE)
    for with_bias in (True, False):
        y = torch.full_like(x, float("nan"))
        kernel(x, 1.5, 0.25, y, with_bias)
        expected = x * 1.5 + (0.25 if with_bias else 0.0)
        torch.testing.assert_close(y, expected)


def scale_rows_swapped(x, scale, bias, y, with_bias):
    y = x


def test_an_arrangement_leaving_tensors_out_keeps_their_order():
    def swapped(x, scale, bias, cache, y, with_bias):
        return y.tile((1, 16)), scale, bias, x.tile((1, 16)), with_bias

    tensors = (Tensor(2), Tensor(0), Tensor(0), Tensor(2), Tensor(2), Tensor(0, constexpr=True))
    with pytest.raises(ninetoothed.errors.ArrangementError, match="in the order given"):
        ninetoothed.make(swapped, scale_rows_swapped, tensors)


def count_arrangement(x, count, y, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), count, y.tile((BLOCK_SIZE,))


def divide(x, count, y):
    y = x / count


def test_a_fixed_constexpr_scalar_may_be_passed_again():
    """ntops's rms_norm fixes ``Tensor(0, constexpr=True, value=n)`` and passes ``n`` too."""
    tensors = (Tensor(1), Tensor(0, constexpr=True, value=4), Tensor(1))
    arrangement = functools.partial(count_arrangement, BLOCK_SIZE=16)
    kernel = ninetoothed.make(arrangement, divide, tensors)
    x = torch.randn(37, device=DEVICE)
    for count in (4, None):
        y = torch.full_like(x, float("nan"))
        kernel(x, count, y)
        torch.testing.assert_close(y, x / 4)


def test_a_fixed_constexpr_scalar_refuses_another_value():
    tensors = (Tensor(1), Tensor(0, constexpr=True, value=4), Tensor(1))
    arrangement = functools.partial(count_arrangement, BLOCK_SIZE=16)
    kernel = ninetoothed.make(arrangement, divide, tensors)
    x = torch.randn(37, device=DEVICE)
    with pytest.raises(ninetoothed.errors.LaunchError, match="fixed at make time to 4"):
        kernel(x, 5, torch.empty_like(x))


def test_python_int_is_an_int64_dtype():
    tensors = (Tensor(1, dtype=int), Tensor(0, dtype=int, constexpr=True), Tensor(1, dtype=int))
    arrangement = functools.partial(count_arrangement, BLOCK_SIZE=16)
    kernel = ninetoothed.make(arrangement, divide, tensors)
    x = torch.randint(-100, 100, (37,), device=DEVICE)
    y = torch.full_like(x, -7)
    kernel(x, 3, y)
    torch.testing.assert_close(y, torch.div(x, 3).to(torch.int64))


def gather_rows_arrangement(index, table, output, BLOCK_SIZE_M=4, BLOCK_SIZE_N=8):
    """Output rows in blocks; each block's indices as one tile; every table row."""
    output_arranged = output.tile((1, BLOCK_SIZE_N)).tile((BLOCK_SIZE_M, 1))
    output_arranged.dtype = output_arranged.dtype.squeeze(1)

    index_arranged = index.unsqueeze(1).tile((BLOCK_SIZE_M, 1))
    index_arranged = index_arranged.expand((-1, output_arranged.shape[1]))
    index_arranged.dtype = index_arranged.dtype.squeeze(1)

    table_arranged = table.tile((1, BLOCK_SIZE_N)).tile((-1, 1))
    table_arranged = table_arranged.expand((output_arranged.shape[0], -1))
    table_arranged.dtype = table_arranged.dtype.squeeze(1)

    return index_arranged, table_arranged, output_arranged


def gather_rows(index, table, output):
    for i in range(output.shape[0]):
        row = index[i]  # one element of the index tile, a run-time value
        output[i] = table[row]


@pytest.mark.parametrize("rows", [1, 4, 11])
def test_a_tile_indexed_by_position_reads_one_element(rows):
    """ntops's embedding: ``idx = input[i]`` of a tile of indices, then ``weight[idx]``."""
    kernel = ninetoothed.make(
        gather_rows_arrangement, gather_rows, (Tensor(1), Tensor(2), Tensor(2))
    )
    table = torch.randn(13, 21, device=DEVICE)
    index = torch.randint(0, 13, (rows,), device=DEVICE)
    output = torch.full((rows, 21), float("nan"), device=DEVICE)
    kernel(index, table, output)
    torch.testing.assert_close(output, table[index])


def pick_arrangement(x, position, y, BLOCK_SIZE=8):
    return x.tile((BLOCK_SIZE,)), position, y.tile((1,))


def pick(x, position, y):
    y = x[position]


@pytest.mark.parametrize("position", [0, 5, 7, 8, -1])
def test_an_element_index_outside_the_tile_reads_other(position):
    """An element index past the tile (or negative) is masked, not read from elsewhere."""
    tensors = (Tensor(1, other=-3.0), Tensor(0), Tensor(1))
    kernel = ninetoothed.make(pick_arrangement, pick, tensors)
    x = torch.randn(21, device=DEVICE)
    y = torch.full((3,), float("nan"), device=DEVICE)
    kernel(x, position, y)
    expected = [
        x[8 * program + position].item()
        if 0 <= position < 8 and 8 * program + position < 21
        else -3.0
        for program in range(3)
    ]
    torch.testing.assert_close(y, torch.tensor(expected, device=DEVICE))


def one_hot_arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.unsqueeze(1).tile((BLOCK_SIZE, 1)), output.tile((BLOCK_SIZE, 8))


def one_hot(input, output):
    output = ntl.where(input == output.offsets(1)[None, :], 1, 0)


def make_one_hot(classes):
    input = Tensor(1, other=-1)
    output = Tensor(2)
    output.shape = input.shape + (classes,)  # the source's sizes, declared
    arrangement = functools.partial(one_hot_arrangement, BLOCK_SIZE=16)
    return ninetoothed.make(arrangement, one_hot, (input, output))


def test_assigning_a_source_shape_declares_its_sizes():
    """ntops's one_hot: ``output.shape = input.shape + (num_classes,)``."""
    kernel = make_one_hot(5)
    input = torch.randint(0, 5, (37,), device=DEVICE)
    output = torch.full((37, 5), -7, device=DEVICE)
    kernel(input, output)
    torch.testing.assert_close(output, torch.nn.functional.one_hot(input, 5))


@pytest.mark.parametrize("shape", [(36, 5), (37, 6)])
def test_a_declared_source_shape_is_checked_at_the_call(shape):
    kernel = make_one_hot(5)
    input = torch.randint(0, 5, (37,), device=DEVICE)
    with pytest.raises(ninetoothed.errors.LaunchError):
        kernel(input, torch.empty(shape, dtype=torch.int64, device=DEVICE))


def add_arrangement(x, y, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def add_through_pointer(x, y):
    ntl.atomic_add(y.data_ptr() + y.offsets(), x)


def test_data_ptr_of_an_arranged_parameter_is_its_source_pointer():
    """ntops's fold: ``ntl.atomic_add(output.data_ptr() + output.offsets(), input)``."""
    arrangement = functools.partial(add_arrangement, BLOCK_SIZE=16)
    kernel = ninetoothed.make(arrangement, add_through_pointer, (Tensor(1), Tensor(1)))
    x = torch.randn(48, device=DEVICE)
    y = torch.randn(48, device=DEVICE)
    expected = x + y
    kernel(x, y)
    torch.testing.assert_close(y, expected)


def rows_of_blocks(tensor, BLOCK_SIZE):
    arranged = tensor.tile((1, BLOCK_SIZE)).tile((1, -1))  # outermost (rows, 1)
    arranged.dtype = arranged.dtype.squeeze(0)
    return arranged


def per_row(tensor):
    arranged = tensor.tile((1,))  # outermost (rows,)
    arranged.dtype = arranged.dtype.squeeze(0)
    return arranged


def scale_each_row(x, scale, y):
    for k in range(x.shape[0]):
        y[k] = x[k] * scale


def scale_each_row_scale_first(scale, x, y):
    scale_each_row(x, scale, y)


@pytest.mark.parametrize("scale_first", [False, True])
def test_outermost_shapes_may_differ_in_literal_ones(scale_first):
    """ntops's instance_norm: the input's grid is ``(N, C, 1)``, the weight's ``(N, C)``.

    Upstream unravels the program id over each tensor's own outermost shape,
    so both address the same rows.
    """

    def arrangement(first, second, y):
        x, scale = (second, first) if scale_first else (first, second)
        arranged = (rows_of_blocks(x, 16), per_row(scale), rows_of_blocks(y, 16))
        if scale_first:
            return arranged[1], arranged[0], arranged[2]
        return arranged

    application = scale_each_row_scale_first if scale_first else scale_each_row
    ranks = (1, 2, 2) if scale_first else (2, 1, 2)
    tensors = tuple(Tensor(rank) for rank in ranks)
    kernel = ninetoothed.make(arrangement, application, tensors)
    x = torch.randn(5, 37, device=DEVICE)
    scale = torch.randn(5, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    if scale_first:
        kernel(scale, x, y)
    else:
        kernel(x, scale, y)
    torch.testing.assert_close(y, x * scale[:, None])


def whole_vector_arrangement(input, output, BLOCK_SIZE=32):
    """One tile over the whole input (at most BLOCK_SIZE long): a symbolic grid
    ``(blocks,)`` that is 1 at run time, against the output's literal ``(1,)``."""
    return input.tile((BLOCK_SIZE,)), output.unsqueeze(0).tile((1,))


def minimum_position(input, output):
    output = ntl.argmin(input, 0)


def test_a_zero_dimensional_tensor_given_a_dimension_by_its_arrangement():
    """ntops's argmin writes a 0-d output: ``Tensor(0)`` unsqueezed, passed a 0-d tensor."""
    kernel = ninetoothed.make(
        whole_vector_arrangement,
        minimum_position,
        (Tensor(1, other=float("inf")), Tensor(0, dtype=ninetoothed.int64)),
    )
    input = torch.randn(29, device=DEVICE)
    output = torch.full((), -7, dtype=torch.int64, device=DEVICE)
    kernel(input, output)
    assert output.item() == input.argmin().item()


def test_a_literal_one_against_a_symbolic_grid_size_is_checked_at_launch():
    kernel = ninetoothed.make(
        whole_vector_arrangement,
        minimum_position,
        (Tensor(1, other=float("inf")), Tensor(0, dtype=ninetoothed.int64)),
    )
    output = torch.full((), -7, dtype=torch.int64, device=DEVICE)
    with pytest.raises(ninetoothed.errors.LaunchError, match="outermost shape"):
        kernel(torch.randn(33, device=DEVICE), output)  # two tiles: the grid is not (1,)
    assert output.item() == -7


def row_sums_arrangement(input, output):
    """Each row as one tile of 8 (a symbolic ``(rows, column_blocks)`` grid, one block
    at run time), against the output's ``(rows,)``: ntops's nll_loss."""
    return input.tile((1, 8)), output.tile((1,))


def row_sums(input, output):
    output = ntl.sum(input, 1)


@pytest.mark.parametrize("columns", [1, 5, 8])
def test_a_grid_dimension_of_one_block_at_run_time_may_be_missing(columns):
    kernel = ninetoothed.make(row_sums_arrangement, row_sums, (Tensor(2, other=0), Tensor(1)))
    input = torch.randn(11, columns, device=DEVICE)
    output = torch.full((11,), float("nan"), device=DEVICE)
    kernel(input, output)
    torch.testing.assert_close(output, input.sum(1))


def test_a_missing_grid_dimension_must_be_one_at_launch():
    kernel = ninetoothed.make(row_sums_arrangement, row_sums, (Tensor(2, other=0), Tensor(1)))
    output = torch.full((11,), float("nan"), device=DEVICE)
    with pytest.raises(ninetoothed.errors.LaunchError):
        kernel(torch.randn(11, 9, device=DEVICE), output)  # two blocks of columns
    assert output.isnan().all()


def row_sums_into_pairs_arrangement(input, output):
    """The output's rows come as pairs, element by element as ntops's pooling
    arranges its output: its tiles of one element are masked."""
    arranged = output.tile((1, 1)).ravel().flatten(end_dim=2).flatten(start_dim=1)
    arranged = arranged.tile((1, -1))
    arranged.dtype = arranged.dtype.squeeze(1)
    return input.tile((1, 8)), arranged


@pytest.mark.parametrize("columns", [3, 8])
def test_a_tile_of_ones_stores_a_block_of_ones_under_a_mask(columns):
    """ntops's fractional_max_pool2d: ``output = ntl.max(x, axis=-1)`` of a ``(1, n)`` tile."""
    kernel = ninetoothed.make(
        row_sums_into_pairs_arrangement, row_sums, (Tensor(2, other=0), Tensor(2))
    )
    input = torch.randn(10, columns, device=DEVICE)
    output = torch.full((5, 2), float("nan"), device=DEVICE)
    kernel(input, output)
    torch.testing.assert_close(output, input.sum(1).reshape(5, 2))


def halves_arrangement(input, output, BLOCK_SIZE=16):
    """Rows as one tile each: the input's (2 * n) and the output's (n) elements."""

    def rows(tensor):
        arranged = tensor.tile((1, BLOCK_SIZE))
        arranged.dtype = arranged.dtype.squeeze(0)
        return arranged

    return rows(input), rows(output)


def gated_halves(input, output):
    for i in range(output.shape[0]):  # the tile's size, at least the output's width
        output[i] = input[i] * ntl.sigmoid(input[i + 7])


def test_tiles_indexed_per_element_need_not_have_the_same_sizes():
    """ntops's glu: a (rows, 14) input and a (rows, 7) output share the tile positions,
    but the application picks their elements itself (those past a tensor are masked)."""
    kernel = ninetoothed.make(halves_arrangement, gated_halves, (Tensor(2), Tensor(2)))
    input = torch.randn(3, 14, device=DEVICE)
    output = torch.full((3, 7), float("nan"), device=DEVICE)
    kernel(input, output)
    torch.testing.assert_close(output, torch.nn.functional.glu(input, 1))


def test_tiles_indexed_per_element_still_share_the_grid():
    kernel = ninetoothed.make(halves_arrangement, gated_halves, (Tensor(2), Tensor(2)))
    with pytest.raises(ninetoothed.errors.LaunchError, match="outermost shape"):
        kernel(torch.randn(3, 14, device=DEVICE), torch.empty(4, 7, device=DEVICE))


def copy_returning_its_block_size(input, output, BLOCK_SIZE=16):
    """ntops's bucketize returns a compile-time value after its tensors."""
    return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,)), BLOCK_SIZE


def copy(input, output):
    output = input


def test_an_arrangement_may_return_values_beyond_the_parameters():
    kernel = ninetoothed.make(copy_returning_its_block_size, copy, (Tensor(1), Tensor(1)))
    input = torch.randn(37, device=DEVICE)
    output = torch.full_like(input, float("nan"))
    kernel(input, output)
    torch.testing.assert_close(output, input)


def test_an_arrangement_may_not_return_tensors_beyond_the_parameters():
    def arrangement(input, output):
        return input.tile((16,)), output.tile((16,)), output.tile((8,))

    with pytest.raises(ninetoothed.errors.ArrangementError, match="returned 3 tensors"):
        ninetoothed.make(arrangement, copy, (Tensor(1), Tensor(1)))


def element_shape(x, position, y):
    y = x[position] + len(x[position].shape) + x[position].ndim  # a scalar: no dimensions


def element_offsets(x, position, y):
    y = x[position].offsets()


def test_one_element_of_a_tile_is_a_scalar():
    kernel = ninetoothed.make(pick_arrangement, element_shape, (Tensor(1), Tensor(0), Tensor(1)))
    x = torch.randn(24, device=DEVICE)
    y = torch.full((3,), float("nan"), device=DEVICE)
    kernel(x, 2, y)
    torch.testing.assert_close(y, x[2::8])
    # Its offsets are that element's (upstream's upsample_linear1d masks with them).
    kernel = ninetoothed.make(pick_arrangement, element_offsets, (Tensor(1), Tensor(0), Tensor(1)))
    y = torch.full((3,), float("nan"), device=DEVICE)
    kernel(x, 2, y)
    torch.testing.assert_close(y, torch.arange(2, 24, 8, device=DEVICE, dtype=y.dtype))
