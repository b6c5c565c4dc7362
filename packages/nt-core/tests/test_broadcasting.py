"""``expand_as``, ``squeeze()`` of every literal singleton, and ``flatten()`` of one
dimension, on concrete sizes against numpy (through :func:`ninetoothed.evaluate`).

The kernels that run them are in ``tests/test_meta_operation_kernels.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ninetoothed import Tensor
from ninetoothed.arrangement.reference import evaluate
from ninetoothed.errors import ArrangementError, MetaOperationError


def sizes_of(tensor: Tensor, shape: tuple[int, ...]) -> dict[str, int]:
    """Values of ``tensor``'s size symbols for a source of ``shape`` (``symbols=``)."""
    return {tensor.size_string(dim): size for dim, size in enumerate(shape)}


def read_values(arranged: Tensor, source: np.ndarray, symbols: dict[str, int]) -> np.ndarray:
    """The source elements each element of ``arranged`` reads (all must be unmasked)."""
    evaluation = evaluate(arranged, source.shape, symbols)
    assert evaluation.mask.all()
    if source.ndim == 0:  # every element reads the one element
        return np.broadcast_to(source, evaluation.indices.shape[:-1])
    return source[tuple(np.moveaxis(evaluation.indices, -1, 0))]


# (the tensor's declared shape, its concrete shape, the other's shape)
BROADCASTS = [
    ((1, None), (1, 5), (3, 5)),
    ((None,), (5,), (2, 3, 5)),
    ((None, 1, None), (4, 1, 6), (4, 7, 6)),
    ((1, 1), (1, 1), (2, 3)),
    ((1, None), (1, 5), (2, 1, 5)),
    ((None, None), (3, 5), (3, 5)),
    ((), (), (2, 3)),
    ((1,), (1,), (4,)),
]


@pytest.mark.parametrize(("declared", "shape", "target"), BROADCASTS)
def test_expand_as_is_numpy_broadcasting(declared, shape, target):
    x, other = Tensor(shape=declared, name="x"), Tensor(len(target), name="other")
    source = np.arange(int(np.prod(shape))).reshape(shape)
    expanded = x.expand_as(other)
    values = read_values(expanded, source, sizes_of(other, target))
    np.testing.assert_array_equal(values, np.broadcast_to(source, target), strict=True)


def test_expand_as_keeps_symbolic_sizes():
    """A symbolic size is not assumed to be 1 (nor the other's): it stays the tensor's
    own, so calls compare it with the other's rather than read index 0."""
    x, other = Tensor(2, name="x"), Tensor(2, name="other")
    assert x.expand_as(other).shape == x.shape
    row = Tensor(shape=(1, None), name="row")
    assert row.expand_as(other).shape == (other.shape[0], row.shape[1])


def test_expand_as_literal_sizes():
    expanded = Tensor(shape=(1, 4), name="x").expand_as(Tensor(shape=(3, 2, 4), name="y"))
    assert expanded.shape == (3, 2, 4)
    source = np.arange(4).reshape(1, 4)
    np.testing.assert_array_equal(
        read_values(expanded, source, {}), np.broadcast_to(source, (3, 2, 4)), strict=True
    )


def test_expand_as_of_a_tiled_level():
    """A whole-vector tile for every row of a row-tiled matrix (rms_norm's weight)."""
    vector, matrix = Tensor(1, name="weight"), Tensor(2, name="input")
    rows = matrix.tile((1, -1))
    arranged = vector.tile((-1,)).expand_as(rows)
    source = np.arange(6) * 10
    evaluation = evaluate(arranged, source.shape, sizes_of(matrix, (4, 6)))
    assert evaluation.level_shapes == ((4, 1), (6,))
    assert evaluation.mask.all()
    np.testing.assert_array_equal(
        source[evaluation.indices[..., 0]], np.broadcast_to(source, (4, 1, 6)), strict=True
    )


def test_expand_as_needs_a_tensor():
    pattern = "expand_as on x: other must be a Tensor, got tuple"
    with pytest.raises(MetaOperationError, match=pattern):
        Tensor(2, name="x").expand_as((3, 4))  # type: ignore[arg-type]


def test_expand_as_does_not_drop_dimensions():
    pattern = r"expand_as on x: other has 1 dimensions .*fewer than the tensor's 2"
    with pytest.raises(MetaOperationError, match=pattern):
        Tensor(2, name="x").expand_as(Tensor(1))


def test_expand_as_of_different_literal_sizes():
    pattern = "expand_as on x: dimension 0 has size 3, which does not broadcast to size 4"
    with pytest.raises(MetaOperationError, match=pattern):
        Tensor(shape=(3, None), name="x").expand_as(Tensor(shape=(2, 4, 5)))


# ------------------------------------------------------------ squeeze()
def test_squeeze_without_dim_removes_every_literal_one():
    x = Tensor(shape=(1, None, 1, None), name="x")
    squeezed = x.squeeze()
    assert squeezed.shape == (x.shape[1], x.shape[3])
    source = np.arange(12).reshape(1, 3, 1, 4)
    np.testing.assert_array_equal(read_values(squeezed, source, {}), source.squeeze(), strict=True)


def test_squeeze_without_dim_keeps_symbolic_sizes():
    """A symbolic size may be 1 at run time, but ``squeeze()`` keeps it: no requirement."""
    x = Tensor(2, name="x")
    assert x.squeeze().shape == x.shape
    assert evaluate(x.squeeze(), (4, 3)).level_shapes == ((4, 3),)


def test_squeeze_without_dim_of_a_whole_row_tile():
    """A row along the middle dimension as a 1-D tile: the tile's literal 1s go."""
    x = Tensor(3, name="x")
    arranged = x.tile((1, -1, 1))
    arranged.dtype = arranged.dtype.squeeze()
    source = np.arange(2 * 5 * 3).reshape(2, 5, 3)
    evaluation = evaluate(arranged, source.shape)
    assert evaluation.level_shapes == ((2, 1, 3), (5,))
    values = source[tuple(np.moveaxis(evaluation.indices, -1, 0))]
    np.testing.assert_array_equal(values, np.moveaxis(source, 1, -1)[:, None], strict=True)


def test_squeeze_with_dim_is_unchanged():
    with pytest.raises(MetaOperationError, match="squeeze on x: dimension 1 has size 8, not 1"):
        Tensor(shape=(1, 8), name="x").squeeze(1)
    with pytest.raises(ArrangementError, match="dimension 0 must have size 1, got 4"):
        evaluate(Tensor(2, name="x").squeeze(0), (4, 3))


# ------------------------------------------------------------ flatten()
def test_flatten_of_a_vector_is_the_vector():
    """Merging one dimension changes nothing: same dimensions, same elements."""
    x = Tensor(1, name="x")
    source = np.arange(7) * 3
    for flattened in (x.flatten(), x.flatten(0), x.flatten(0, 1), x.flatten(end_dim=1)):
        assert flattened.dims == x.dims
        np.testing.assert_array_equal(read_values(flattened, source, {}), source, strict=True)


def test_flatten_of_one_dimension_among_several():
    x = Tensor(3, name="x")
    flattened = x.flatten(1, 2)
    assert flattened.shape == x.shape
    source = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(read_values(flattened, source, {}), source, strict=True)
