"""Constant padding, compared with ``torch.nn.functional.pad``.

Two ways upstream programs pad: handing slices to the arrangement as plain
Python values in ``make``'s tensors tuple (they are compile-time constants,
not kernel parameters), and the ``pad`` meta-operation, whose padding reads
the tensor's ``other`` value.
"""

import functools
import math
import os

import pytest
import torch
import torch.nn.functional as F

import ninetoothed
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

VALUES = [0.0, 1.0, -1.0, float("-inf"), math.pi, math.sqrt(2026)]

CASES = [
    ((2, 3), (1, 2, 0, 1)),
    ((2, 3), (1, 1, 1, 2)),
    ((2, 3, 4), (1, 3, 1, 0, 0, 0)),
    ((2, 3), (-1, -1, 0, 0)),
    ((6, 5), (-1, 2, 1, -2)),
]


def pairs(ndim, pad):
    """``F.pad``'s flat list (last dimension first) as (before, after) per dimension."""
    return [(pad[2 * (ndim - 1 - dim)], pad[2 * (ndim - 1 - dim) + 1]) for dim in range(ndim)]


def copy_slices(shape, pad):
    """Where the input lands in the output, and which part of the input does."""
    output_slices, input_slices = [], []
    for size, (before, after) in zip(shape, pairs(len(shape), pad)):
        output_slices.append(slice(max(before, 0), size + before + after - max(after, 0)))
        input_slices.append(slice(max(-before, 0), size - max(-after, 0)))
    return tuple(output_slices), tuple(input_slices)


def arrangement(output, input, output_slices, input_slices):
    return output[output_slices], input[input_slices]


def application(output, input):
    output = input


_kernels = {}


def pad_by_slices(input, pad, value):
    output_slices, input_slices = copy_slices(input.shape, pad)
    new_shape = [
        size + before + after for size, (before, after) in zip(input.shape, pairs(input.ndim, pad))
    ]
    output = torch.full(new_shape, value, dtype=input.dtype, device=input.device)
    key = repr((input.ndim, output_slices, input_slices))  # slices hash from 3.12 on
    if key not in _kernels:
        tensors = tuple(Tensor(input.ndim, shape_options={"upper_bound": 64}) for _ in range(2))
        _kernels[key] = ninetoothed.make(
            arrangement, application, (*tensors, output_slices, input_slices)
        )
    _kernels[key](output, input)
    return output


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("shape, pad", CASES)
def test_pad_through_slices(shape, pad, value):
    input = torch.randn(shape, device=DEVICE)

    output = pad_by_slices(input, pad, value)

    torch.testing.assert_close(output, F.pad(input, pad, value=value))


def pad_arrangement(input, output, padding, BLOCK_SIZE=4):
    tile_shape = (BLOCK_SIZE,) * input.ndim
    return input.pad(padding).tile(tile_shape), output.tile(tile_shape)


def padded(input, pad, value):
    padding = pairs(input.ndim, pad)
    arranged = functools.partial(pad_arrangement, padding=padding)
    kernel = ninetoothed.make(
        arranged, application_reading_input, (Tensor(input.ndim, other=value), Tensor(input.ndim))
    )
    output = torch.full(F.pad(input, pad).shape, float("nan"), device=input.device)
    kernel(input, output)
    return output


def application_reading_input(input, output):
    output = input


@pytest.mark.parametrize("value", VALUES)
def test_pad_meta_operation_reads_other(value):
    input = torch.randn(5, 6, device=DEVICE)
    pad = (2, 1, 1, 3)

    output = padded(input, pad, value)

    torch.testing.assert_close(output, F.pad(input, pad, value=value))


def test_pad_meta_operation_crops_with_negative_padding():
    input = torch.randn(7, 6, device=DEVICE)
    pad = (-1, 2, 1, -2)

    output = padded(input, pad, float("-inf"))

    torch.testing.assert_close(output, F.pad(input, pad, value=float("-inf")))


@pytest.mark.parametrize("shape, pad", CASES + [((2, 3, 5, 7), (1, 1, 2, 0))])
def test_pad_meta_operation_takes_the_flat_form_of_torch(shape, pad):
    """``x.pad((w_before, w_after, h_before, h_after))``: last dimension first, as ``F.pad``
    (upstream's conv2d with padding pads its input so)."""
    input = torch.randn(shape, device=DEVICE)
    arranged = functools.partial(pad_arrangement, padding=pad, BLOCK_SIZE=2)
    tensors = (Tensor(len(shape), other=-2.5), Tensor(len(shape)))
    kernel = ninetoothed.make(arranged, application_reading_input, tensors)
    output = torch.full(F.pad(input, pad).shape, float("nan"), device=DEVICE)

    kernel(input, output)

    torch.testing.assert_close(output, F.pad(input, pad, value=-2.5))


@pytest.mark.parametrize("pad", [(1, 1, 2), (1,) * 6])
def test_a_flat_padding_of_a_bad_length_is_refused(pad):
    with pytest.raises(ninetoothed.errors.MetaOperationError, match="flat padding.*at most 4"):
        Tensor(2).pad(pad)
