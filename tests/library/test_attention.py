"""Scaled dot-product attention and rotary position embedding on every framework and dtype."""

from __future__ import annotations

import numpy as np
import pytest
from support.library import DTYPES, assert_close, attention, f64, random


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(framework, ops, dtype, causal):
    q, k, v = (random((2, 2, 37, 16), dtype) for _ in "qkv")
    given = [framework.from_numpy(t) for t in (q, k, v)]
    result = ops.scaled_dot_product_attention(*given, is_causal=causal)
    assert_close(framework.to_numpy(result), attention(q, k, v, causal, 0.25), dtype, matrix=True)


@pytest.mark.parametrize(("lq", "lk"), [(20, 45), (45, 20), (3, 40)])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_lengths_and_grouped_heads(framework, ops, lq, lk, causal):
    """Ragged lengths, queries longer or shorter than the keys, the decoding kernel
    (3 queries), and two query heads per key/value head."""
    q = random((1, 4, lq, 32), "float16")
    k, v = (random((1, 2, lk, 32), "float16") for _ in "kv")
    given = [framework.from_numpy(t) for t in (q, k, v)]
    result = ops.scaled_dot_product_attention(*given, is_causal=causal, scale=0.3, enable_gqa=True)
    assert_close(framework.to_numpy(result), attention(q, k, v, causal, 0.3), "float16", True)


@pytest.mark.parametrize("lq", [3, 37], ids=["decoding", "prefill"])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_over_no_keys_gives_zeros(framework, ops, lq, causal):
    """No keys: an output of zeros, as torch's (a softmax over nothing weighs nothing),
    not the NaN of 0 / 0."""
    q = random((1, 2, lq, 16), "float32")
    k, v = (random((1, 2, 0, 16), "float32") for _ in "kv")
    given = [framework.from_numpy(t) for t in (q, k, v)]
    result = framework.to_numpy(ops.scaled_dot_product_attention(*given, is_causal=causal))
    np.testing.assert_array_equal(result, np.zeros((1, 2, lq, 16), "float32"))


def test_sdpa_of_strided_inputs(framework, ops):
    q, k, v = (random((1, 2, 24, 16), "float32") for _ in "qkv")
    given = [framework.non_contiguous(t) for t in (q, k, v)]
    result = ops.scaled_dot_product_attention(*given)
    assert_close(framework.to_numpy(result), attention(q, k, v, False, 0.25), "float32", True)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_key_blocks_whole_then_ragged(framework, ops, causal):
    """The key loops run their whole blocks unmasked and the ragged last one masked
    (``nt_triton._codegen.ragged_loops``): keys a multiple of the pinned block of 16,
    a ragged block of one key after two whole ones, fewer keys than one block, one
    key, then a multiple again through the same kernel; 40 queries are three
    programs; strided inputs."""
    for keys in (32, 33, 15, 1, 17, 48):
        q = random((1, 2, 40, 16), "float32")
        k, v = (random((1, 2, keys, 16), "float32") for _ in "kv")
        given = [framework.non_contiguous(t) for t in (q, k, v)]
        result = framework.to_numpy(ops.scaled_dot_product_attention(*given, is_causal=causal))
        assert_close(result, attention(q, k, v, causal, 0.25), "float32", matrix=True)


def test_grouped_heads_need_enable_gqa(framework, ops):
    q, k = random((1, 4, 8, 16), "float16"), random((1, 2, 8, 16), "float16")
    arrays = [framework.from_numpy(t) for t in (q, k, k)]
    with pytest.raises(ValueError, match="enable_gqa"):
        ops.scaled_dot_product_attention(*arrays)


def rope(x: np.ndarray, sin: np.ndarray, cos: np.ndarray, interleaved: bool) -> np.ndarray:
    sin, cos = f64(sin)[None, :, None, :], f64(cos)[None, :, None, :]
    if interleaved:
        first, second = f64(x)[..., 0::2], f64(x)[..., 1::2]
        rotated = (first * cos - second * sin, first * sin + second * cos)
        return np.stack(rotated, axis=-1).reshape(x.shape)
    first, second = np.split(f64(x), 2, axis=-1)
    return np.concatenate((first * cos - second * sin, first * sin + second * cos), axis=-1)


@pytest.mark.block(2)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [True, False])
def test_rotary_position_embedding(framework, ops, dtype, interleaved):
    x, angles = random((2, 5, 3, 16), dtype), np.random.default_rng(1).standard_normal((5, 8))
    sin, cos = (random_like(f(angles), dtype) for f in (np.sin, np.cos))
    given = [framework.from_numpy(t) for t in (x, sin, cos)]
    result = ops.rotary_position_embedding(*given, interleaved=interleaved)
    assert_close(framework.to_numpy(result), rope(x, sin, cos, interleaved), dtype)


@pytest.mark.block(2)
def test_rotary_position_embedding_of_a_strided_input(framework, ops):
    x = random((2, 3, 4, 8), "float32")
    sin, cos = random((3, 4), "float32"), random((3, 4), "float32")
    given = [framework.non_contiguous(x), framework.from_numpy(sin), framework.from_numpy(cos)]
    result = ops.rotary_position_embedding(*given, interleaved=False)
    assert_close(framework.to_numpy(result), rope(x, sin, cos, False), "float32")


def random_like(values: np.ndarray, dtype: str) -> np.ndarray:
    from support.library import rounded

    return rounded(values, dtype)
