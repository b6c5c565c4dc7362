"""Jagged tensors of one call with different offsets: queries against keys of other lengths.

Variable-length attention (vLLM's ``cu_seqlens_q`` and ``cu_seqlens_k``)
passes queries and keys as nested tensors whose entries have different
lengths.  The grid walks the queries; each program loops over its entry's
keys, whose jagged dimension lies below the grid, masked by the keys' own
lengths.  Upstream masks each jagged tensor by its own lengths, so this
computes what it says; only jagged tensors whose lengths shape the grid (or
are tied to another's) must share their offsets.
"""

import math
import os

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import LaunchError

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"
BLOCK = 16 if DEVICE == "cuda" else 4
"""Rows per block: Triton's GPU dot takes no side below 16; the interpreter's any (small
blocks give entries of several blocks)."""
TOLERANCE = 2e-3 if DEVICE == "cuda" else 1e-4
"""float32 products are TF32 on the GPU (about 1e-3)."""

BLOCK_Q = Symbol("block_q", constexpr=True)
BLOCK_K = Symbol("block_k", constexpr=True)


def attention_arrangement(q, k, v, scale, o, block_q=BLOCK_Q, block_k=BLOCK_K):
    def rows(x):  # (batch, heads, queries / block_q, 1) x (block_q, head_dim)
        arranged = x.tile((1, 1, block_q, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        return arranged

    def keys(x):  # each query block walks its entry's key blocks
        arranged = x.tile((1, 1, block_k, -1)).tile((1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, q_arranged.shape[-2], -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
        return arranged

    q_arranged = rows(q)
    return q_arranged, keys(k), keys(v), scale, rows(o)


def attention_application(q, k, v, scale, o):
    acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    total = ntl.zeros((q.shape[-2],), dtype=ntl.float32)
    high = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)
    for i in range(k.shape[0]):  # this entry's key blocks
        scores = ntl.dot(q, ntl.trans(k[i])) * scale
        scores = ntl.where(k[i].offsets(-2) < k.source.shape[-2], scores, float("-inf"))
        new_high = ntl.maximum(high, ntl.max(scores, 1))
        weights = ntl.exp(scores - new_high[:, None])
        alpha = ntl.exp(high - new_high)
        acc = acc * alpha[:, None] + ntl.dot(weights, v[i])
        total = total * alpha + ntl.sum(weights, 1)
        high = new_high
    o = acc / total[:, None]  # noqa: F841


def nested_heads(lengths, heads, head_dim):
    """(batch, heads, lengths, head_dim), ragged in dimension 2, and its values."""
    values = torch.randn(heads, sum(lengths), head_dim, device=DEVICE)
    offsets = torch.tensor(np.cumsum((0, *lengths)), device=DEVICE)
    return torch.nested.nested_tensor_from_jagged(values, offsets, jagged_dim=2), values


def make_attention():
    shape_options = (None, None, None, {"constexpr": True})
    tensors = [Tensor(4, jagged_dim=2, shape_options=shape_options) for _ in range(4)]
    tensors.insert(3, Tensor(0))
    return ninetoothed.make(attention_arrangement, attention_application, tuple(tensors))


@pytest.mark.parametrize(
    "query_lengths, key_lengths",
    [((5, 17, 3), (9, 4, 21)), ((1, 12), (12, 1)), ((6, 0, 7), (3, 5, 10)), ((40, 2), (3, 37))],
)
def test_attention_with_keys_of_other_lengths(query_lengths, key_lengths):
    heads, head_dim = 2, 16
    q, q_values = nested_heads(query_lengths, heads, head_dim)
    k, k_values = nested_heads(key_lengths, heads, head_dim)
    v = torch.nested.nested_tensor_from_jagged(
        torch.randn_like(k_values), k.offsets(), jagged_dim=2
    )
    o_values = torch.full_like(q_values, float("nan"))
    o = torch.nested.nested_tensor_from_jagged(o_values, q.offsets(), jagged_dim=2)
    scale = 1 / math.sqrt(head_dim)

    make_attention()(q, k, v, scale, o, block_q=BLOCK, block_k=BLOCK)

    q_starts, k_starts = np.cumsum((0, *query_lengths)), np.cumsum((0, *key_lengths))
    for b in range(len(query_lengths)):
        queries = q_values[:, q_starts[b] : q_starts[b + 1]].double()
        keys = k_values[:, k_starts[b] : k_starts[b + 1]].double()
        values = v.values()[:, k_starts[b] : k_starts[b + 1]].double()
        expected = torch.softmax(queries @ keys.transpose(1, 2) * scale, -1) @ values
        torch.testing.assert_close(
            o_values[:, q_starts[b] : q_starts[b + 1]],
            expected.float(),
            atol=TOLERANCE,
            rtol=TOLERANCE,
        )


def test_keys_and_values_of_different_offsets_are_refused():
    """``k`` and ``v`` walk the same blocks (their sizes are tied): one length per entry."""
    q, _ = nested_heads((5, 3), 1, 16)
    k, _ = nested_heads((4, 6), 1, 16)
    v, _ = nested_heads((6, 4), 1, 16)
    o = torch.nested.nested_tensor_from_jagged(
        torch.empty_like(q.values()), q.offsets(), jagged_dim=2
    )
    with pytest.raises(
        LaunchError,
        match=r"jagged parameters 'k' and 'v' have different offsets \(entry lengths \[4, 6\] "
        r"and \[6, 4\]\)",
    ):
        make_attention()(q, k, v, 0.25, o, block_q=BLOCK, block_k=BLOCK)


def test_queries_and_outputs_of_different_offsets_are_refused():
    """``q`` and ``o`` shape the grid: each program's rows must be one entry's rows of both."""
    q, _ = nested_heads((5, 3), 1, 16)
    k, k_values = nested_heads((4, 6), 1, 16)
    v = torch.nested.nested_tensor_from_jagged(
        torch.randn_like(k_values), k.offsets(), jagged_dim=2
    )
    o, _ = nested_heads((3, 5), 1, 16)
    with pytest.raises(
        LaunchError,
        match=r"jagged parameters 'q' and 'o' have different offsets \(entry lengths \[5, 3\] "
        r"and \[3, 5\]\)",
    ):
        make_attention()(q, k, v, 0.25, o, block_q=BLOCK, block_k=BLOCK)
