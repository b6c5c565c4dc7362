"""``Tensor.eval`` / ``Tensor.subs`` (and ``ninetoothed.eval`` / ``ninetoothed.subs``).

``eval`` turns a symbolic arranged tensor into a numpy array whose shape is
every level's shape, outermost first, and whose entries are the flat
(row-major) index of the source element each element reads, or -1 where the
element is masked.  ``subs`` gives symbols values and returns a tensor whose
``eval()`` needs no further values.
"""

import math

import numpy as np
import pytest

import ninetoothed
from ninetoothed import Tensor


def tile_leading(array, tile_shape):
    """Tile the leading axes of ``array`` the way ``Tensor.tile`` does (-1 outside)."""
    ndim = len(tile_shape)
    outer = [math.ceil(size / tile) for size, tile in zip(array.shape, tile_shape)]
    padded = np.full(
        [o * t for o, t in zip(outer, tile_shape)] + list(array.shape[ndim:]), -1, array.dtype
    )
    padded[tuple(slice(0, size) for size in array.shape[:ndim])] = array
    split = padded.reshape(
        [n for pair in zip(outer, tile_shape) for n in pair] + list(array.shape[ndim:])
    )
    order = list(range(0, 2 * ndim, 2)) + list(range(1, 2 * ndim, 2))
    order += list(range(2 * ndim, split.ndim))
    return split.transpose(order)


def flat_indices(shape):
    return np.arange(math.prod(shape)).reshape(shape)


def test_a_concrete_tensor_evaluates_without_substitutions():
    assert np.array_equal(Tensor(shape=(2, 3)).eval(), flat_indices((2, 3)))


@pytest.mark.parametrize("substitute_first", [False, True])
@pytest.mark.parametrize("shape_as_tensor", [False, True])
def test_eval_and_subs_of_a_hierarchy(shape_as_tensor, substitute_first):
    x = Tensor(2)
    block_size_m = ninetoothed.block_size()
    block_size_n = ninetoothed.block_size()
    source = Tensor(shape=(5, 6)) if shape_as_tensor else {"shape": (5, 6)}
    subs = {x: source, block_size_m: 2, block_size_n: 3}

    def evaluate(tensor):
        if substitute_first:
            return tensor.subs(subs).eval()
        return tensor.eval(subs)

    indices = flat_indices((5, 6))
    assert np.array_equal(evaluate(x), indices)
    assert np.array_equal(evaluate(x.permute((1, 0))), indices.T)

    tiled = x.tile((block_size_m, block_size_n))
    expected = tile_leading(indices, (2, 3))
    assert np.array_equal(evaluate(tiled), expected)

    tiled_twice = tiled.tile((block_size_m, block_size_n))
    expected = tile_leading(expected, (2, 3))
    assert np.array_equal(evaluate(tiled_twice), expected)

    tiled_twice.dtype = tiled_twice.dtype.flatten()
    expected = expected.reshape(2, 1, 6, 2, 3)
    assert np.array_equal(evaluate(tiled_twice), expected)

    tiled_twice.dtype.dtype = tiled_twice.dtype.dtype.flatten()
    assert np.array_equal(evaluate(tiled_twice), expected.reshape(2, 1, 6, 6))


def test_module_level_functions():
    x = Tensor(1)
    block_size = ninetoothed.block_size()
    subs = {x: {"shape": (7,)}, block_size: 4}
    tiled = x.tile((block_size,))
    expected = np.array([[0, 1, 2, 3], [4, 5, 6, -1]])

    assert np.array_equal(ninetoothed.eval(tiled, subs), expected)
    substituted = ninetoothed.subs(tiled, subs)
    assert substituted.shape == (2,)
    assert substituted.dtype.shape == (4,)
    assert np.array_equal(ninetoothed.eval(substituted), expected)


def test_scalars_evaluate_to_zero():
    assert np.array_equal(Tensor(0).eval(), np.array(0))


KEYS = [
    slice(None),
    slice(None, None, -1),
    slice(0, -1, 2),
    slice(1, None, 2),
    (slice(None), 1, slice(None)),
    (1, slice(None), None),
    (slice(None, None, -1), 0, slice(1, -1)),
    (Ellipsis, 1),
    (None, slice(None), 1, slice(None)),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("shape", [(3, 4, 2), (2, 3, 4, 5)])
def test_slicing_matches_numpy(shape, key):
    if isinstance(key, tuple) and len([k for k in key if k is not None]) > len(shape):
        pytest.skip("more indices than dimensions")

    assert np.array_equal(Tensor(shape=shape)[key].eval(), flat_indices(shape)[key])


def test_unsqueeze_and_expand():
    x = Tensor(1)
    block_size = ninetoothed.block_size()
    subs = {x: {"shape": (5,)}, block_size: 3}
    row = flat_indices((5,))

    assert np.array_equal(x.unsqueeze(0).eval(subs), row[None, :])
    assert np.array_equal(x.unsqueeze(0).expand((3, -1)).eval(subs), np.stack([row] * 3))

    tiles = tile_leading(row, (3,))
    tiled = x.tile((block_size,)).unsqueeze(0)
    assert np.array_equal(tiled.eval(subs), tiles[None])
    assert np.array_equal(tiled.expand((3, -1)).eval(subs), np.stack([tiles] * 3))
