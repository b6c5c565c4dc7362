"""A C library accepts what a just-in-time call accepts: broadcast views longer than the
grid and the sizes tied to them, and tensors beside the grid with fewer tiles.

The kernels are upstream programs' shapes (``tests/upstream/test_expand.py``,
``test_separate_flows.py``: ntops's grouped-query attention reads a mask expanded to
every query head; a KV-cache copy writes fewer rows than the grid has programs).
Each call goes to the library's C launch function and to the just-in-time host
function (``support.aot_parity.Harness``): both launch, with the same grid and
arguments, or both refuse with the same status.
"""

from __future__ import annotations

import pytest
from support.aot_parity import Harness, make_aot

import ninetoothed
from ninetoothed import Tensor

pytestmark = pytest.mark.interpreter_only


def heads(x, mask, out, BLOCK=8):
    return x.tile((1, 1, BLOCK)), mask.tile((1, 1, BLOCK)), out.tile((1, 1, BLOCK))


def add_mask(x, mask, out):
    out = x + mask  # noqa: F841


def rows(x, out, present, slot):
    return tuple(t.tile((4, 8)) for t in (x, out, present, slot))


def double_and_copy(x, out, present, slot):
    out = 2 * x  # noqa: F841
    slot = present  # noqa: F841


@pytest.fixture(scope="module")
def kernels(tmp_path_factory, fake_cuda):
    directory = tmp_path_factory.mktemp("relaxed")
    made = {}
    for name, arrangement, application, count, ndim in (
        ("masked", heads, add_mask, 3, 3),
        ("beside", rows, double_and_copy, 4, 2),
    ):

        def tensors(ndim=ndim, count=count):
            return tuple(Tensor(ndim, dtype=ninetoothed.float32) for _ in range(count))

        aot = make_aot(arrangement, application, tensors(), directory, name)
        jit = ninetoothed.make(arrangement, application, tensors(), kernel_name=name)
        made[name] = Harness(aot, jit, fake_cuda)
    return made


def _contiguous(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return strides


def test_a_broadcast_view_longer_than_the_grid(kernels):
    """A mask (20,) expanded to (2, 6, 20) beside x (2, 3, 20): launched; the same
    sizes without stride 0, or a broadcast shorter than the grid: refused."""
    masked = kernels["masked"]
    x = [2, 3, 20]
    for mask in ([2, 6, 20], [2, 3, 20], [5, 6, 20]):
        shapes = [x, mask, x]
        strides = [_contiguous(x), [0, 0, 1], _contiguous(x)]
        assert masked.check(shapes, strides) is not None, masked.last_message
    for mask, strides in (([2, 6, 20], _contiguous([2, 6, 20])), ([2, 2, 20], [0, 0, 1])):
        shapes = [x, mask, x]
        assert masked.check(shapes, [_contiguous(x), strides, _contiguous(x)]) is None
        assert "must have the same size" in masked.last_message


@pytest.mark.parametrize("present", [1, 4, 7])
def test_a_copy_beside_the_grid_with_fewer_tiles(kernels, present):
    beside = kernels["beside"]
    shapes = [[13, 6], [13, 6], [present, 6], [present, 6]]
    assert beside.check(shapes) is not None, beside.last_message


def test_a_copy_beside_the_grid_with_more_tiles_is_refused(kernels):
    beside = kernels["beside"]
    assert beside.check([[5, 6], [5, 6], [9, 6], [9, 6]]) is None
    assert "'present' has outermost shape" in beside.last_message
