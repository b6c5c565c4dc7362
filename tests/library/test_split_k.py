"""Split-K: mm, bmm, addmm and conv2d with their reductions cut into chunks, on every
framework, against float64.

The chunk count is pinned (``pinned_splits``) so that the split runs on any
device; with the pinned 16-blocks of the CPU, ``k = 150`` is 10 ``k`` tiles, the
last one ragged: 3 chunks walk 4, 4 and 2 of them, 8 chunks 2, 2, 2, 2, 2 and
then three chunks past the end, whose partials must be zeros (the workspace
is NaN-poisoned like every output).  Every grid has several programs along
each of its dimensions, and no more than that: under Triton's interpreter
each program's every step costs, so outputs are 2 x 2 tiles (ragged ones).
The rule that picks the count is checked on its own.
"""

from __future__ import annotations

import pytest
from support.base import ON_GPU
from support.library import DTYPES, assert_close, conv2d, f64, random

from ninetoothed.library import pinned_block_sizes, pinned_splits
from ninetoothed.library.ops import split


@pytest.mark.parametrize(
    ("dtype", "count"),
    [*((dtype, 3) for dtype in DTYPES), ("float32", 8)],
)
def test_mm(framework, ops, passes, dtype, count):
    """3 chunks of 4, 4 and 2 tiles; 8 chunks of 2, the last three past the end (their
    partials are zeros)."""
    a, b = random((20, 150), dtype), random((150, 30), dtype)
    with pinned_splits(count):
        result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
    assert passes == [count]
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), dtype, matrix=True)


def test_split_and_whole_in_one_process(framework, ops, passes):
    """The split kernel, the single one, and the split kernel again with another count
    (the count is a run-time size: one kernel serves both), on the same operands."""
    a, b = random((20, 150), "float32"), random((150, 30), "float32")
    expected = f64(a) @ f64(b)
    for count in (2, 1, 3):
        with pinned_splits(count):
            result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
        assert_close(framework.to_numpy(result), expected, "float32", matrix=True)
    assert passes == [2, 3]


def test_mm_of_strided_operands(framework, ops, passes):
    a, b = random((20, 150), "float32"), random((150, 33), "float32")
    with pinned_splits(3):
        result = ops.mm(framework.non_contiguous(a), framework.non_contiguous(b))
    assert passes == [3]
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)


def test_mm_of_a_few_rows(framework, ops, passes):
    """Decoding's shape: the thin tiles' split kernel."""
    a, b = random((2, 150), "float16"), random((150, 40), "float16")
    with pinned_splits(3):
        result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
    assert passes == [3]
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float16", matrix=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm(framework, ops, passes, dtype):
    """``mat2`` transposed (strided), as attention's ``k`` is."""
    a, b = random((2, 20, 150), dtype), random((2, 150, 18), dtype)
    with pinned_splits(3):
        result = ops.bmm(framework.from_numpy(a), framework.non_contiguous(b))
    assert passes == [3]
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), dtype, matrix=True)


# Each dtype with one of the input's shapes (full, a row, a column), not every pair: the
# dtype is the products' and the shape the epilogue's, and each run costs seconds here.
@pytest.mark.parametrize(("dtype", "input_shape"), list(zip(DTYPES, [(19, 29), (29,), (19, 1)])))
def test_addmm(framework, ops, passes, dtype, input_shape):
    input, a, b = random(input_shape, dtype), random((19, 150), dtype), random((150, 29), dtype)
    given = [framework.from_numpy(t) for t in (input, a, b)]
    with pinned_splits(3):
        result = ops.addmm(*given, beta=0.5, alpha=2.0)
    assert passes == [3]
    expected = 0.5 * f64(input) + 2.0 * (f64(a) @ f64(b))
    assert_close(framework.to_numpy(result), expected, dtype, matrix=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d(framework, ops, passes, dtype):
    """``k = 17 * 3 * 3 = 153``; 2 * 3 * 4 = 24 rows and 20 channels of output."""
    x, w = random((2, 17, 5, 6), dtype), random((20, 17, 3, 3), dtype)
    with pinned_splits(3):
        result = ops.conv2d(framework.from_numpy(x), framework.from_numpy(w))
    assert passes == [3]
    assert_close(framework.to_numpy(result), conv2d(x, w), dtype, matrix=True)


@pytest.mark.parametrize(
    ("stride", "padding", "dilation"), [(2, 1, 1), ((1, 2), (2, 0), 1), (1, (2, 1), 2)]
)
def test_conv2d_options_on_strided_operands(framework, ops, passes, stride, padding, dilation):
    """``k = 9 * 3 * 2 = 54``: 4 steps, 2 chunks of 2."""
    x, w = random((2, 9, 7, 6), "float32"), random((19, 9, 3, 2), "float32")
    with pinned_splits(2):
        result = ops.conv2d(
            framework.non_contiguous(x), framework.non_contiguous(w), stride, padding, dilation
        )
    assert passes == [2]
    pairs = [(v, v) if isinstance(v, int) else v for v in (stride, padding, dilation)]
    assert_close(framework.to_numpy(result), conv2d(x, w, *pairs), "float32", matrix=True)


def test_the_rule_splits_only_outputs_too_small_for_the_gpu():
    """At the paper's shapes: the convolution's 20 tiles of 128 x 128 split 6 ways
    (120 programs, chunks of 768), the 4096 x 4096 products' 1,024 tiles not at
    all; decoding's thin outputs (2 rows) never: memory-bound, host-bound loops.
    Products count 64 x 64 tiles (their deep-pipelined space keeps a multiprocessor
    busy with one), so prefill's key and value projections are not split."""
    assert split.splits(1, 4 * 12 * 12, 512, 512 * 9, tile=split.CONVOLUTION_TILE) == 6
    assert split.splits(1, 4 * 12 * 12, 512, 512 * 9) == 1  # 72 tiles of 64 x 64
    assert split.splits(1, 4096, 4096, 4096) == 1
    assert split.splits(4, 2048, 2048, 2048) == 1
    assert split.splits(1, 2, 4096, 4096, tallest=16) == 1
    assert split.splits(1, 64, 1024, 4096, tallest=64) == 1
    assert split.splits(1, 1024, 1024, 4096) == 1  # 256 tiles
    assert split.splits(1, 512, 1024, 4096) == 1  # 128 tiles: one wave
    assert split.splits(1, 256, 512, 4096) == 4  # 32 tiles, not thin: split
    assert split.splits(1, 100, 333, 777) == 3  # 12 tiles, 3 chunks of at least 4 steps
    assert split.splits(1, 64, 64, 300) == 1  # too short to split
    assert split.splits(1, 0, 64, 4096) == 1


def test_the_rule_counts_pinned_tiles():
    """Pinned 16-blocks stand for the tile and the step: (37, 300) x (300, 45) is 9
    tiles and 18 steps, so 4 chunks (at least 4 steps each)."""
    with pinned_block_sizes(16):
        assert split.splits(1, 37, 45, 300) == 4
        with pinned_splits(7):
            assert split.splits(1, 37, 45, 300) == 7
    assert split.splits(1, 37, 45, 300) == 1


# Long enough to split: at least 2 chunks of 4 steps of the tile that decides, the
# reference tile's 64 on the GPU, the pinned 16 here (3 chunks; not more, as every
# step of every program costs under the interpreter).
DEPTH = 1040 if ON_GPU else 200


def test_the_rule_picks_a_split_by_itself(framework, ops, passes):
    """No count pinned: an output of a few tiles over a long reduction is split, on
    the GPU (by the reference tile) and the CPU (by the pinned one) alike; a thin
    output (decoding's few rows) is not."""
    a, b = random((80, DEPTH), "float32"), random((DEPTH, 20), "float32")
    result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
    assert len(passes) == 1 and passes[0] > 1
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)
    passes.clear()
    thin = random((20, DEPTH), "float32")
    result = ops.mm(framework.from_numpy(thin), framework.from_numpy(b))
    assert passes == []
    assert_close(framework.to_numpy(result), f64(thin) @ f64(b), "float32", matrix=True)


def test_an_empty_reduction_is_not_split(framework, ops, passes):
    """k = 0 has no chunks to cut (their length would be 0): zeros, one kernel."""
    a, b = random((5, 0), "float32"), random((0, 7), "float32")
    with pinned_splits(3):
        result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
    assert passes == []
    assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)


@pytest.mark.parametrize("count", [0, -1, 1.5, True])
def test_pinned_splits_refuses_a_bad_count(count):
    with pytest.raises(ValueError, match="count must be a positive int"):
        with pinned_splits(count):
            pass
