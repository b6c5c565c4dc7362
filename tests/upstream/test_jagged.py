"""Jagged tensors: ``Tensor(ndim, jagged_dim=d)`` against torch's nested (jagged) tensors.

Dimension 0 is the batch; dimension ``jagged_dim`` has a different length per
batch entry.  The grid covers the longest entry; elements past an entry's own
length are masked (loads read ``other``, stores are skipped).
"""

import functools
import os

import pytest
import torch

import ninetoothed
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

BLOCK_SIZE = Symbol("block_size", constexpr=True)


def arrangement(input, output, block_size=BLOCK_SIZE):
    tile_shape = (1,) + (block_size,) * (input.ndim - 1)
    return input.tile(tile_shape), output.tile(tile_shape)


def application(input, output):
    output = input


def expand_arrangement(dst, src, jagged_dim, block_size=BLOCK_SIZE):
    tile_shape = (1,) + (block_size,) * (dst.ndim - 1)
    sizes = tuple(-1 if dim != jagged_dim else dst.shape[dim] for dim in range(src.ndim))
    return dst.tile(tile_shape), src.expand(sizes).tile(tile_shape)


def copy_application(dst, src):
    dst = src


def batches(lengths, width):
    return [torch.randn(length, width, device=DEVICE) for length in lengths]


@pytest.mark.xfail(
    strict=True,
    raises=NotImplementedError,
    reason="issue 10: jagged tensors (Tensor(jagged_dim=...))",
)
@pytest.mark.parametrize("padding", [-1.0, 0.5])
@pytest.mark.parametrize("lengths", [(3, 17, 9), (1, 1), (20,)])
def test_to_padded_tensor(lengths, padding):
    entries = batches(lengths, 6)
    input = torch.nested.nested_tensor(entries, layout=torch.jagged)
    output = torch.full((len(lengths), max(lengths), 6), float("nan"), device=DEVICE)
    tensors = (Tensor(3, jagged_dim=1, other=padding), Tensor(3))
    kernel = ninetoothed.make(arrangement, application, tensors)

    kernel(input, output, block_size=8)

    torch.testing.assert_close(output, torch.nested.to_padded_tensor(input, padding))


@pytest.mark.xfail(
    strict=True,
    raises=NotImplementedError,
    reason="issue 10: jagged tensors (Tensor(jagged_dim=...))",
)
def test_expand_into_a_jagged_tensor():
    lengths = (5, 12, 2)
    dst = torch.nested.nested_tensor(batches(lengths, 4), layout=torch.jagged)
    src = torch.randn(len(lengths), 1, 4, device=DEVICE)
    arranged = functools.partial(expand_arrangement, jagged_dim=1)
    kernel = ninetoothed.make(arranged, copy_application, (Tensor(3, jagged_dim=1), Tensor(3)))

    kernel(dst, src, block_size=8)

    for index, entry in enumerate(dst.unbind()):
        torch.testing.assert_close(entry, src[index].expand_as(entry))


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


def test_making_a_kernel_for_a_jagged_tensor_says_what_is_missing():
    tensors = (Tensor(3, jagged_dim=1), Tensor(3))
    with pytest.raises(NotImplementedError, match="jagged tensors .* are not supported yet"):
        ninetoothed.make(arrangement, application, tensors)
