"""Flash-decoding: ``scaled_dot_product_attention`` of a few query rows against a long
key cache, keys split over programs and merged, on every framework, against float64.

Blocks are pinned to 16 keys on the CPU, so ``Lk = 200`` is 13 key blocks, the
last ragged; the rule cuts them into 5 chunks of 3, 3, 3, 3 and 1 blocks (on
the GPU, unpinned, 4 blocks of 64 in 2 chunks: the lengths are chosen so that
the rule splits there too).  Pinned counts past the blocks leave chunks of
padding only, whose partials carry no weight.  Outputs and the float32
workspaces are NaN-poisoned (an element never written fails), and grids have
several programs along batch, head groups and splits.  ``splits`` records the
key length of each call that took the two kernels.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from support.base import ON_GPU, poison_outputs
from support.library import DTYPES, assert_close, attention, random

from ninetoothed.library import flash_decoding
from ninetoothed.library.ops import decoding
from ninetoothed.library.ops.kernels import kernel


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The key-split counts of the calls that took the two kernels."""
    counts: list[int] = []
    original = decoding.attend

    def recorded(framework, arguments, *rest, **options):
        result = original(framework, arguments, *rest, **options)
        if result is not None:
            counts.append(framework.describe(arguments[1]).shape[2])  # marks a call
        return result

    monkeypatch.setattr(decoding, "attend", recorded)
    return counts


def run(framework, ops, q, k, v, **options):
    given = [framework.from_numpy(t) for t in (q, k, v)]
    result = ops.scaled_dot_product_attention(*given, enable_gqa=True, **options)
    return framework.to_numpy(result)


@pytest.mark.parametrize(("dtype", "lq"), list(zip(DTYPES, [1, 4, 16])))
def test_grouped_heads_over_a_ragged_cache(framework, ops, splits, dtype, lq):
    """8 query heads over 2 key/value heads (4 per group, packed into one program's
    rows), 2 batches, 200 keys: 5 chunks by the rule.  Each dtype with one query length
    (the rows packed: 4, 16, 64), not every pair: each run costs seconds here."""
    q = random((2, 8, lq, 32), dtype)
    k, v = (random((2, 2, 200, 32), dtype) for _ in "kv")
    result = run(framework, ops, q, k, v, scale=0.3)
    assert splits == [200]
    assert_close(result, attention(q, k, v, False, 0.3), dtype, matrix=True)


@pytest.mark.parametrize("count", [1, 2, 5, 9])
def test_pinned_counts_and_chunks_of_padding(framework, ops, splits, count):
    """One chunk, two, and more chunks than the 3 key blocks (the last ones padding)."""
    q = random((1, 4, 3, 16), "float32")
    k, v = (random((1, 4, 40, 16), "float32") for _ in "kv")
    with decoding.pinned_key_splits(count):
        result = run(framework, ops, q, k, v)
    assert splits == [40]
    assert_close(result, attention(q, k, v, False, 0.25), "float32", matrix=True)


def test_head_dimension_not_a_power_of_two_and_groups_of_two(framework, ops, splits):
    """Heads of 24 (padded to 32), 2 query heads per key/value head, 5 query rows."""
    q = random((1, 6, 5, 24), "float16")
    k, v = (random((1, 3, 210, 24), "float16") for _ in "kv")
    result = run(framework, ops, q, k, v)
    assert splits == [210]
    assert_close(result, attention(q, k, v, False, 24**-0.5), "float16", matrix=True)


def test_strided_inputs(framework, ops, splits):
    q = random((1, 2, 2, 16), "float32")
    k, v = (random((1, 2, 220, 16), "float32") for _ in "kv")
    given = [framework.non_contiguous(t) for t in (q, k, v)]
    result = framework.to_numpy(ops.scaled_dot_product_attention(*given))
    assert splits == [220]
    assert_close(result, attention(q, k, v, False, 0.25), "float32", matrix=True)


def test_no_keys_keeps_one_kernel_and_gives_zeros(framework, ops, splits):
    q = random((1, 2, 1, 16), "float32")
    k, v = (random((1, 2, 0, 16), "float32") for _ in "kv")
    with decoding.pinned_key_splits(3):
        result = run(framework, ops, q, k, v)
    assert splits == []
    np.testing.assert_array_equal(result, np.zeros((1, 2, 1, 16), "float32"))


@pytest.mark.gpu
@pytest.mark.parametrize("config", range(len(flash_decoding.CONFIGS)))
def test_every_configuration_of_the_split_kernel(framework, monkeypatch, splits, config):
    """Each of the split kernel's configurations, unpinned, computes the same attention
    (one that fails to compile or computes wrong fails here).  On the CPU a small
    cache in 3 pinned chunks; on the GPU a decoding step of grouped heads 32/8 over
    a ragged cache of 4,100 keys, split by the rule."""
    ops = framework.ops
    poison_outputs(monkeypatch, ops.framework, framework.poisoned_like)
    heads, keys, dim = ((32, 8), 4100, 128) if ON_GPU else ((4, 2), 300, 16)
    q = random((1, heads[0], 1, dim), "float16")
    k, v = (random((1, heads[1], keys, dim), "float16") for _ in "kv")
    arguments = (*(framework.from_numpy(t) for t in (q, k, v)), dim**-0.5)
    shape = (1, heads[0], 1, dim)
    with contextlib.nullcontext() if ON_GPU else decoding.pinned_key_splits(3):
        result = decoding.attend(ops.framework, arguments, shape, heads[1], dim, config=config)
    assert splits == [keys]
    expected = attention(q, k, v, False, dim**-0.5)
    assert_close(framework.to_numpy(result), expected, "float16", matrix=True)


def test_merge_of_rows_without_keys_gives_zeros(framework):
    """The merge alone: a row whose partials all have a log-sum-exp of -inf (no key)
    is zeros, not the NaN of 0 / 0; the other row is the weighted mean."""
    merge = kernel(flash_decoding, part="merge", head_bound=16)
    partials = random((1, 1, 3, 2, 16), "float32")
    lse = np.array([[[[-np.inf, 1.0], [-np.inf, 2.0], [-np.inf, -np.inf]]]], "float32")
    given = [framework.from_numpy(t) for t in (partials, lse)]
    output = framework.poisoned((1, 1, 2, 16), "float32")
    (result,) = framework.call(merge, [*given, output], {}, [2])
    weights = np.array([2.0, 4.0, 0.0]) / 6.0
    expected = np.stack([np.zeros(16), (weights[:, None] * partials[0, 0, :, 1]).sum(0)])
    np.testing.assert_allclose(result[0, 0], expected, rtol=1e-6)


@pytest.mark.parametrize("lq", [1, 16])
def test_causal_keeps_one_kernel_and_torch_top_left_mask(framework, ops, splits, lq):
    """Causal, ``lq`` query rows over 200 keys: torch aligns the mask top-left, so row
    ``i`` sees keys ``0 … i`` only; no split."""
    q = random((1, 4, lq, 16), "float32")
    k, v = (random((1, 2, 200, 16), "float32") for _ in "kv")
    result = run(framework, ops, q, k, v, is_causal=True)
    assert splits == []
    assert_close(result, attention(q, k, v, True, 0.25), "float32", matrix=True)


def test_causal_mask_is_torch_s(framework, ops):
    """The float64 reference's causal mask is torch's own (top-left), checked on torch."""
    torch = pytest.importorskip("torch")
    f = torch.nn.functional.scaled_dot_product_attention
    q = random((1, 2, 3, 16), "float32")
    k, v = (random((1, 2, 50, 16), "float32") for _ in "kv")
    expected = f(*(torch.from_numpy(t).double() for t in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(attention(q, k, v, True, 0.25), expected.numpy(), atol=1e-12)


def test_longer_queries_keep_one_kernel(framework, ops, splits):
    q = random((1, 2, 17, 16), "float16")
    k, v = (random((1, 2, 100, 16), "float16") for _ in "kv")
    result = run(framework, ops, q, k, v)
    assert splits == []
    assert_close(result, attention(q, k, v, False, 0.25), "float16", matrix=True)


def test_pinned_zero_keeps_one_kernel(framework, ops, splits):
    q = random((1, 2, 1, 16), "float16")
    k, v = (random((1, 2, 100, 16), "float16") for _ in "kv")
    with decoding.pinned_key_splits(0):
        result = run(framework, ops, q, k, v)
    assert splits == []
    assert_close(result, attention(q, k, v, False, 0.25), "float16", matrix=True)


@pytest.mark.parametrize(
    ("group", "queries", "expected"),
    [(4, 1, (4, 4)), (8, 1, (8, 2)), (1, 1, (1, 16)), (4, 16, (4, 16)), (32, 16, (4, 16)),
     (3, 5, (1, 16)), (6, 3, (2, 8)), (1, 16, (1, 16))],
)  # fmt: skip
def test_packing(group, queries, expected):
    """Rows a power of two holding every query; heads dividing the group; at least 16
    rows and at most 64 a program."""
    assert decoding.packing(group, queries) == expected


@pytest.mark.parametrize(
    ("programs", "keys", "expected"),
    [(8, 1024, 8), (8, 4096, 16), (8, 32768, 16), (32, 4096, 4), (8, 100, 1),
     (300, 32768, 1), (8, 0, 1), (0, 4096, 1), (2, 64 * 300, 60), (132, 8192, 1),
     (66, 8192, 2), (67, 8192, 1)],
)  # fmt: skip
def test_key_splits_rule(programs, keys, expected):
    """Blocks of 64 keys: at least 2 a chunk, at most 132 programs (one a processor), at
    most 64 chunks, none empty (300 blocks in 64 chunks would be chunks of 5: 60 of
    them)."""
    assert decoding.key_splits(programs, keys) == expected


def test_pinned_key_splits_refuses_bad_counts():
    for bad in (-1, True, 1.5, flash_decoding.MAX_SPLITS + 1):
        with pytest.raises(ValueError, match="pinned_key_splits: count"):
            with decoding.pinned_key_splits(bad):
                pass
