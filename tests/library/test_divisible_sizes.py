"""The library's ops on sizes their tiles divide and sizes they do not, in one process.

Where a tile divides a size, its range checks vanish from the compiled kernel
(``nt_triton._codegen.divisibility``); each test alternates divisible and
ragged shapes (blocks pinned to 16 on the CPU, several programs per
dimension) so that a plan, alignment or compiled kernel kept from the
previous shape would show, against float64 with poisoned outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.library import assert_close, f64, random


def test_mm(framework, ops):
    for m, k, n in [(64, 48, 32), (65, 48, 33), (64, 49, 32), (64, 48, 32), (1, 32, 16)]:
        a, b = random((m, k), "float32"), random((k, n), "float32")
        result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
        assert_close(framework.to_numpy(result), f64(a) @ f64(b), "float32", matrix=True)


def test_add(framework, ops):
    for shape in [(8, 32), (7, 9), (3, 5, 32), (1,), (4, 64)]:
        x, y = random(shape, "float32"), random(shape, "float32")
        result = ops.add(framework.from_numpy(x), framework.from_numpy(y))
        assert_close(framework.to_numpy(result), f64(x) + f64(y), "float32")


def softmax(x: np.ndarray) -> np.ndarray:
    exponentials = np.exp(x - x.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)


def test_softmax(framework, ops):
    for shape in [(5, 64), (5, 40), (33, 16), (5, 64)]:
        x = random(shape, "float32")
        result = ops.softmax(framework.from_numpy(x), -1)
        assert_close(framework.to_numpy(result), softmax(f64(x)), "float32")


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        rows, columns = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((rows, columns), bool)), scores, -np.inf)
    return softmax(scores) @ v


@pytest.mark.parametrize("causal", [False, True])
def test_attention(framework, ops, causal):
    # (queries, keys, head dimension): divisible, ragged, a padded head, divisible again.
    for length, keys, head in [(48, 64, 32), (47, 63, 32), (48, 48, 24), (32, 64, 16)]:
        if causal:
            keys = length
        q, k, v = (random((2, 2, rows, head), "float32") for rows in (length, keys, keys))
        given = [framework.from_numpy(t) for t in (q, k, v)]
        result = ops.scaled_dot_product_attention(*given, is_causal=causal)
        expected = attention(f64(q), f64(k), f64(v), causal)
        # float32 dots are TF32 on the GPU, as in test_attention.py: a matrix product's tolerance.
        assert_close(framework.to_numpy(result), expected, "float32", matrix=True)
