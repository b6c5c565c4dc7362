"""Flash attention as upstream writes it, with and without its 1-D ``offsets`` masking.

Upstream's ``x.offsets(dim)`` is the one-dimensional vector of source indices
along source dimension ``dim`` covered by the tile, so comparing ``k[i]``'s
offsets with the sequence length masks the *columns* of ``q @ k.T`` (the keys),
whatever the block sizes are.
"""

import functools
import math
import os

import pytest
import torch
import torch.nn.functional as F

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def arrangement(
    q, k, v, o, BLOCK_SIZE_M=ninetoothed.block_size(), BLOCK_SIZE_N=ninetoothed.block_size()
):
    def arrange_q_or_o(input):
        arranged = input.tile((1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))

        return arranged

    def arrange_k_or_v(input):
        arranged = input.tile((1, 1, BLOCK_SIZE_N, -1)).tile((1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, q_arranged.shape[-2], -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))

        return arranged

    q_arranged = arrange_q_or_o(q)

    return q_arranged, arrange_k_or_v(k), arrange_k_or_v(v), arrange_q_or_o(o)


def application(q, k, v, o):
    q_loaded = (q * 1.44269504089).to(ntl.float16)

    acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    l_i = ntl.full((q.shape[-2],), 1, dtype=ntl.float32)
    m_i = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)

    for i in range(k.shape[0]):
        qk = ntl.dot(q_loaded, ntl.trans(k[i]))

        m_ij = ntl.maximum(m_i, ntl.max(qk, 1))
        p = ntl.exp2(qk - m_ij[:, None])
        l_ij = ntl.sum(p, 1)

        alpha = ntl.exp2(m_i - m_ij)
        acc = acc * alpha[:, None] + ntl.dot(p.to(ntl.float16), v[i])
        m_i = m_ij
        l_i = l_i * alpha + l_ij

    acc /= l_i[:, None]
    o = acc


def masked_application(q, k, v, o):
    q_loaded = (q * 1.44269504089).to(ntl.float16)

    acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    l_i = ntl.full((q.shape[-2],), 1, dtype=ntl.float32)
    m_i = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)

    for i in range(k.shape[0]):
        qk = ntl.dot(q_loaded, ntl.trans(k[i]))
        qk = ntl.where(k[i].offsets(-2) < k.source.shape[-2], qk, float("-inf"))

        m_ij = ntl.maximum(m_i, ntl.max(qk, 1))
        p = ntl.exp2(qk - m_ij[:, None])
        l_ij = ntl.sum(p, 1)

        alpha = ntl.exp2(m_i - m_ij)
        acc = acc * alpha[:, None] + ntl.dot(p.to(ntl.float16), v[i])
        m_i = m_ij
        l_i = l_i * alpha + l_ij

    acc /= l_i[:, None]
    o = acc


SHAPE_OPTIONS = (None, None, {"constexpr": True}, {"constexpr": True, "upper_bound": 64})


def attention(application, q, k, v, block_size_m, block_size_n):
    tensors = tuple(Tensor(4, shape_options=SHAPE_OPTIONS) for _ in range(4))
    arranged = functools.partial(arrangement, BLOCK_SIZE_M=block_size_m, BLOCK_SIZE_N=block_size_n)
    kernel = ninetoothed.make(arranged, application, tensors)
    o = torch.full_like(q, float("nan"))

    kernel(q, k, v, o)

    return o


def inputs(seq_len, head_dim=16):
    return tuple(
        torch.randn(1, 2, seq_len, head_dim, dtype=torch.float16, device=DEVICE) for _ in range(3)
    )


def reference(q, k, v):
    q, k, v = (t.double() for t in (q, k, v))
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


@pytest.mark.parametrize(
    "application, seq_len, block_sizes",
    [
        pytest.param(application, 64, (16, 16), id="unmasked"),
        pytest.param(
            masked_application,
            50,
            (16, 16),
            id="masked-equal-blocks",
        ),
        pytest.param(
            masked_application,
            40,
            (32, 16),
            id="masked-taller-q-blocks",
        ),
        pytest.param(
            masked_application,
            40,
            (16, 32),
            id="masked-taller-k-blocks",
        ),
    ],
)
def test_attention(application, seq_len, block_sizes):
    """Lengths that are not multiples of the blocks need the keys past the end masked."""
    q, k, v = inputs(seq_len)

    o = attention(application, q, k, v, *block_sizes)

    torch.testing.assert_close(o.double(), reference(q, k, v), atol=1e-2, rtol=1e-2)


def causal_arrangement(q, k, v, scale, q_start, o, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16):
    q_arranged, k_arranged, v_arranged, o_arranged = arrangement(
        q, k, v, o, BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE_N
    )

    return q_arranged, k_arranged, v_arranged, scale, q_start, o_arranged


def causal_application(q, k, v, scale, q_start, o):
    q_loaded = (q * scale * 1.44269504089).to(q.dtype)

    acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    l_i = ntl.full((q.shape[-2],), 1, dtype=ntl.float32)
    m_i = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)

    for i in range(k.shape[0]):
        qk = ntl.dot(q_loaded, ntl.trans(k[i]))
        qk = ntl.where((q.offsets(-2) + q_start)[:, None] >= k[i].offsets(-2), qk, float("-inf"))

        m_ij = ntl.maximum(m_i, ntl.max(qk, 1))
        p = ntl.exp2(qk - m_ij[:, None])
        l_ij = ntl.sum(p, 1)

        alpha = ntl.exp2(m_i - m_ij)
        acc = acc * alpha[:, None] + ntl.dot(p.to(v.dtype.dtype), v[i])
        m_i = m_ij
        l_i = l_i * alpha + l_ij

    acc /= l_i[:, None]
    o = acc.to(o.dtype)


def test_causal_attention_with_a_query_start():
    """The examples' causal attention: query ``i`` sees keys ``0 .. q_start + i``."""
    seq_len, q_start = 48, 5
    q, k, v = inputs(seq_len)
    q = q[:, :, : seq_len - q_start]
    tensors = tuple(Tensor(4, shape_options=SHAPE_OPTIONS) for _ in range(3))
    tensors = (*tensors, Tensor(0), Tensor(0), Tensor(4, shape_options=SHAPE_OPTIONS))
    kernel = ninetoothed.make(causal_arrangement, causal_application, tensors)
    o = torch.full_like(q, float("nan"))
    scale = 1 / math.sqrt(q.shape[-1])

    kernel(q, k, v, scale, q_start, o)

    mask = torch.ones(q.shape[-2], seq_len, dtype=torch.bool, device=DEVICE).tril(q_start)
    expected = F.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), attn_mask=mask, scale=scale
    )
    torch.testing.assert_close(o.double(), expected, atol=1e-2, rtol=1e-2)
