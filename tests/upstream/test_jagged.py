"""Jagged tensors: ``Tensor(ndim, jagged_dim=d)`` against torch's nested (jagged) tensors.

Dimension 0 is the batch; dimension ``jagged_dim`` has a different length per
batch entry.  The grid covers the longest entry; elements past an entry's own
length are masked (loads read ``other``, stores are skipped).  Every kernel
here runs with small pinned tiles, so each dimension has several programs,
on lengths that are not multiples of the tile, with entries of length 0 and 1.
"""

import functools
import os

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import CodegenError, LaunchError

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

BLOCK_SIZE = Symbol("block_size", constexpr=True)

LENGTHS = [(3, 17, 9), (1, 1), (20,), (5, 0, 11, 1)]
"""Lengths not multiples of the tiles (4, 2, 8), single elements, an empty entry."""


def arrangement(input, output, block_size=BLOCK_SIZE):
    tile_shape = (1,) + (block_size,) * (input.ndim - 1)
    return input.tile(tile_shape), output.tile(tile_shape)


def application(input, output):
    output = input  # noqa: F841


def expand_arrangement(dst, src, jagged_dim, block_size=BLOCK_SIZE):
    tile_shape = (1,) + (block_size,) * (dst.ndim - 1)
    sizes = tuple(-1 if dim != jagged_dim else dst.shape[dim] for dim in range(src.ndim))
    return dst.tile(tile_shape), src.expand(sizes).tile(tile_shape)


def copy_application(dst, src):
    dst = src  # noqa: F841


def batches(lengths, width, dtype=torch.float32):
    return [torch.randn(length, width, device=DEVICE, dtype=dtype) for length in lengths]


def nested(entries):
    return torch.nested.nested_tensor(entries, layout=torch.jagged)


def poisoned_like(tensor):
    """A nested tensor of ``tensor``'s lengths filled with NaN (what a kernel must overwrite)."""
    return torch.nested.nested_tensor_from_jagged(
        torch.full_like(tensor.values(), float("nan")), tensor.offsets()
    )


@pytest.mark.parametrize("padding", [-1.0, 0.5])
@pytest.mark.parametrize("lengths", LENGTHS)
def test_to_padded_tensor(lengths, padding):
    input = nested(batches(lengths, 6))
    output = torch.full((len(lengths), max(lengths), 6), float("nan"), device=DEVICE)
    tensors = (Tensor(3, jagged_dim=1, other=padding), Tensor(3))
    kernel = ninetoothed.make(arrangement, application, tensors)

    kernel(input, output, block_size=4)

    torch.testing.assert_close(output, torch.nested.to_padded_tensor(input, padding))


@pytest.mark.parametrize("lengths", LENGTHS)
def test_expand_into_a_jagged_tensor(lengths):
    dst = poisoned_like(nested(batches(lengths, 5)))
    src = torch.randn(len(lengths), 1, 5, device=DEVICE)
    arranged = functools.partial(expand_arrangement, jagged_dim=1)
    kernel = ninetoothed.make(arranged, copy_application, (Tensor(3, jagged_dim=1), Tensor(3)))

    kernel(dst, src, block_size=4)

    for index, entry in enumerate(dst.unbind()):
        torch.testing.assert_close(entry, src[index].expand_as(entry))


def add_arrangement(x, y, z, block_size=BLOCK_SIZE):
    tile_shape = (1, block_size, block_size)
    return x.tile(tile_shape), y.tile(tile_shape), z.tile(tile_shape)


def add_application(x, y, z):
    z = x + y  # noqa: F841


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("lengths", LENGTHS)
def test_elementwise_add_of_jagged_tensors(lengths, dtype):
    x = nested(batches(lengths, 7, dtype))
    y = torch.nested.nested_tensor_from_jagged(torch.randn_like(x.values()), x.offsets())
    z = poisoned_like(x)
    tensors = tuple(Tensor(3, jagged_dim=1) for _ in range(3))
    kernel = ninetoothed.make(add_arrangement, add_application, tensors)

    kernel(x, y, z, block_size=4)

    for a, b, c in zip(x.unbind(), y.unbind(), z.unbind()):
        torch.testing.assert_close(c, (a.double() + b.double()).to(dtype))
    # Nothing outside the entries: the values hold exactly the entries, all written.
    assert not torch.isnan(z.values()).any()


BLOCK_L = Symbol("block_l", constexpr=True)
BLOCK_C = Symbol("block_c", constexpr=True)


def column_sum_arrangement(input, output, block_l=BLOCK_L, block_c=BLOCK_C):
    # Each program: one batch entry, one block of columns; it walks the entry's rows.
    rows = input.tile((1, block_l, block_c)).tile((1, -1, 1)).squeeze(1)
    return rows, output.tile((1, block_c))


def column_sum_application(input, output):
    total = ntl.zeros(output.shape, dtype=ntl.float32)
    for i in range(input.shape[1]):
        total += ntl.sum(input[0, i, 0], axis=1)
    output = total  # noqa: F841


@pytest.mark.parametrize("blocks", [(4, 4), (2, 8), (8, 2)])
@pytest.mark.parametrize("lengths", LENGTHS)
def test_row_wise_reduction_over_the_jagged_dimension(lengths, blocks):
    input = nested(batches(lengths, 10))
    output = torch.full((len(lengths), 10), float("nan"), device=DEVICE)
    tensors = (Tensor(3, jagged_dim=1, other=0.0), Tensor(2))
    kernel = ninetoothed.make(column_sum_arrangement, column_sum_application, tensors)

    kernel(input, output, block_l=blocks[0], block_c=blocks[1])

    expected = torch.stack([entry.double().sum(0) for entry in input.unbind()]).float()
    torch.testing.assert_close(output, expected)


def entry_mean_arrangement(input, mean, blocks, block_l=BLOCK_L):
    # Each program: one batch entry, walked in blocks of block_l.
    rows = input.tile((1, block_l)).tile((1, -1)).squeeze(1)
    rows.dtype = rows.dtype.squeeze(0)
    rows.dtype.dtype = rows.dtype.dtype.squeeze(0)
    return rows, mean.tile((1,)), blocks.tile((1,))


def entry_mean_application(input, mean, blocks):
    total = 0.0
    for i in range(input.shape[0]):  # this entry's number of blocks
        total += ntl.sum(input[i])
    mean = total / input.source.shape[1]  # noqa: F841  (this entry's length)
    blocks = input.shape[0]  # noqa: F841


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide")  # the empty entry
@pytest.mark.parametrize("block_l", [2, 4])
@pytest.mark.parametrize("lengths", LENGTHS)
def test_the_application_sees_its_entrys_own_length(lengths, block_l):
    """Upstream: in the kernel, the jagged size is the program's entry's length, not the longest."""
    input = nested([torch.randn(length, device=DEVICE) for length in lengths])
    mean = torch.full((len(lengths),), float("nan"), device=DEVICE)
    blocks = torch.full((len(lengths),), -1, device=DEVICE)
    tensors = (Tensor(2, jagged_dim=1), Tensor(1), Tensor(1, dtype=ninetoothed.int64))
    kernel = ninetoothed.make(entry_mean_arrangement, entry_mean_application, tensors)

    kernel(input, mean, blocks, block_l=block_l)

    expected = torch.stack([entry.double().mean() for entry in input.unbind()]).float()
    torch.testing.assert_close(mean, expected, equal_nan=True)  # an empty entry's mean is NaN
    assert blocks.tolist() == [-(-length // block_l) for length in lengths]


def test_the_entry_length_of_a_program_spanning_several_entries_is_refused():
    def pairs(input, output):
        return input.tile((1, 4)).tile((2, 1)), output.tile((2,))

    def length(input, output):
        output = input.source.shape[1]  # noqa: F841

    with pytest.raises(CodegenError, match="'input'.*span several batch entries"):
        ninetoothed.make(pairs, length, (Tensor(2, jagged_dim=1), Tensor(1)))


def test_every_entry_empty_launches_nothing():
    input = nested(batches((0, 0), 3))
    output = torch.full((2, 0, 3), float("nan"), device=DEVICE)
    kernel = ninetoothed.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3)))

    kernel(input, output, block_size=4)  # a grid of no programs: nothing to do, no error


def test_jit_with_a_jagged_annotation():
    input_, output_ = Tensor(3, jagged_dim=1, other=-2.0), Tensor(3)
    tiles = (1, 4, 4)

    @ninetoothed.jit
    def padded(input: input_.tile(tiles), output: output_.tile(tiles)):  # noqa: F821
        output = input  # noqa: F841

    input = nested(batches((6, 2, 9), 5))
    output = torch.full((3, 9, 5), float("nan"), device=DEVICE)
    padded(input, output)

    torch.testing.assert_close(output, torch.nested.to_padded_tensor(input, -2.0))


def test_jagged_dimension_2():
    lengths = (3, 0, 6)
    values = torch.randn(sum(lengths), 4, device=DEVICE)
    offsets = torch.tensor(np.cumsum((0, *lengths)), device=DEVICE)
    input = torch.nested.nested_tensor_from_jagged(values, offsets).transpose(1, 2)
    assert input._ragged_idx == 2
    output = torch.full((3, 4, max(lengths)), float("nan"), device=DEVICE)
    tensors = (Tensor(3, jagged_dim=2, other=7.0), Tensor(3))
    kernel = ninetoothed.make(arrangement, application, tensors)

    kernel(input, output, block_size=2)

    for index, entry in enumerate(input.unbind()):
        torch.testing.assert_close(output[index, :, : lengths[index]], entry)
        assert (output[index, :, lengths[index] :] == 7.0).all()


@pytest.mark.parametrize("other", [(5, 3), (4, 4), (3, 5, 1)])
def test_jagged_parameters_with_different_offsets_are_refused(other):
    x = nested(batches((3, 5), 4))
    y = nested(batches(other, 4))
    z = poisoned_like(x)
    kernel = ninetoothed.make(
        add_arrangement, add_application, tuple(Tensor(3, jagged_dim=1) for _ in range(3))
    )
    with pytest.raises(
        LaunchError,
        match=r"jagged parameters 'x' and 'y' have different offsets \(entry lengths \[3, 5\] "
        rf"and \[{', '.join(map(str, other))}\]\)",
    ):
        kernel(x, y, z, block_size=4)


def test_a_dense_tensor_for_a_jagged_parameter_is_refused():
    kernel = ninetoothed.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3)))
    dense = torch.randn(2, 3, 4, device=DEVICE)
    with pytest.raises(
        LaunchError,
        match=r"parameter 'input' is jagged \(Tensor\(jagged_dim=1\)\) and expects a torch "
        r"nested tensor with layout=torch.jagged, got a dense tensor of shape \(2, 3, 4\)",
    ):
        kernel(dense, torch.empty_like(dense), block_size=4)


def test_a_nested_tensor_for_a_dense_parameter_is_refused():
    kernel = ninetoothed.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3)))
    input = nested(batches((2, 3), 4))
    with pytest.raises(LaunchError, match=r"parameter 'output' is not jagged, got a nested"):
        kernel(input, poisoned_like(input), block_size=4)


def test_a_strided_nested_tensor_is_refused():
    kernel = ninetoothed.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3)))
    strided = torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(3, 4)])
    with pytest.raises(LaunchError, match=r"got a nested tensor of layout torch.strided"):
        kernel(strided, torch.empty(2, 3, 4), block_size=4)


def test_a_tile_spanning_several_batch_entries_is_refused():
    def spanning(input, output):
        return input.tile((2, 4, 4)), output.tile((2, 4, 4))

    with pytest.raises(CodegenError, match=r"a tile must hold one batch entry"):
        ninetoothed.make(spanning, application, (Tensor(3, jagged_dim=1), Tensor(3)))


def test_a_gather_from_a_jagged_tensor_is_refused():
    def gather(input, output):
        output = input.source[0, 0, 0]  # noqa: F841

    with pytest.raises(CodegenError, match=r"input.source\[...\]: gathers .* jagged tensor"):
        ninetoothed.make(arrangement, gather, (Tensor(3, jagged_dim=1), Tensor(3)))


def test_a_jagged_tensor_is_described():
    tensor = Tensor(3, jagged_dim=1)
    assert tensor.jagged_dim == 1
    assert tensor.tile((1, 4, 4)).dtype.jagged_dim == 1
    assert Tensor(3).jagged_dim is None


@pytest.mark.parametrize(
    "ndim, jagged_dim, pattern",
    [
        (3, 0, r"jagged_dim must name a dimension after the batch dimension 0 .* got 0"),
        (3, 3, r"\(1 to 2\), got 3"),
        (1, 1, r"of its 1 dimensions"),
        (3, "1", r"jagged_dim must be an int, got str '1'"),
    ],
)
def test_a_bad_jagged_dim_is_refused(ndim, jagged_dim, pattern):
    with pytest.raises(ninetoothed.errors.MetaOperationError, match=pattern):
        Tensor(ndim, jagged_dim=jagged_dim)


def test_a_fixed_jagged_size_is_refused():
    with pytest.raises(ninetoothed.errors.MetaOperationError, match=r"cannot be given the fixed"):
        Tensor(shape=(None, 8, 4), jagged_dim=1)


def test_a_traced_call_with_jagged_parameters_is_refused(monkeypatch):
    import nt_torch.adapter

    kernel = ninetoothed.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3)))
    input = nested(batches((2, 3), 4))
    monkeypatch.setattr(nt_torch.adapter, "traced", lambda: True)  # as under torch.compile
    with pytest.raises(LaunchError, match=r"jagged parameters run eagerly only"):
        kernel(input, torch.empty(2, 3, 4), block_size=4)
