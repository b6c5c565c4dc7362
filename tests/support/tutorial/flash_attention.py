"""Causal FlashAttention-2 with its backward, as a differentiable declaration.

Three kernels over ``(batch, heads, seq, head_dim)`` tensors, all in our
language:

* ``forward``: the online softmax of ``attention.py`` (self-contained here), also writing
  each row's log-sum-exp (``lse``, base 2, of the scaled scores; a
  ``(batch, heads, seq, 1)`` tensor, like ``delta``), which the
  backward recomputes probabilities from;
* ``backward_dk_dv``: one program per key block; it walks the query blocks,
  recomputes ``P = exp2(Q·Kᵀ·scale·log2e - lse)``, and accumulates
  ``dV += Pᵀ·dO`` and ``dK += dSᵀ·Q·scale`` with ``dS = P ∘ (dO·Vᵀ - delta)``;
* ``backward_dq``: one program per query block; it walks the key blocks and
  accumulates ``dQ += dS·K·scale``.

``delta = rowsum(dO ∘ O)`` is computed in the backward with the tensor
operators the frameworks share.  Attention is causal: padded keys are always
in a query's future, so the causal mask also masks the ragged last key block.
:func:`make` builds the three kernels and the declaration; ``configs`` pins
the tile sizes (``BM``, ``BN``), otherwise they are auto-tuned (16 to 64).
"""

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

LOG2E = 1.44269504089
BM = Symbol("BM", meta=True, lower_bound=16, upper_bound=64)
BN = Symbol("BN", meta=True, lower_bound=16, upper_bound=64)
HEAD = {"constexpr": True, "upper_bound": 128}
SHAPE_OPTIONS = (None, None, None, HEAD)


def _rows(input, block):
    """``(B, H, S, D)`` -> a ``(block, D)`` tile per program (``lse``: ``D`` is 1)."""
    arranged = input.tile((1, 1, block, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1))
    return arranged


def _walk(input, block, count):
    """Every ``(block, D)`` tile of the sequence, in order, for each of ``count`` programs."""
    arranged = input.tile((1, 1, block, -1)).tile((1, 1, -1, -1)).expand((-1, -1, count, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
    arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
    return arranged


def _query_programs(q, walked, scale, rows):
    """One program per query block: ``walked`` tensors go block by block, ``rows`` alongside."""
    q_arranged = _rows(q, BM)
    count = q_arranged.shape[-2]
    walking = tuple(_walk(tensor, BN, count) for tensor in walked)
    return (q_arranged, *walking, scale, *(_rows(tensor, BM) for tensor in rows))


def forward_arrangement(q, k, v, scale, o, lse):
    return _query_programs(q, (k, v), scale, (o, lse))


def forward_application(q, k, v, scale, o, lse):
    # The online softmax in base 2, the scale folded into the queries.
    scaled = (q * (scale * LOG2E)).to(q.dtype)
    total = ntl.zeros((q.shape[-2],), dtype=ntl.float32)
    peak = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)
    out = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    for i in range(k.shape[0]):
        scores = ntl.where(
            q.offsets(-2)[:, None] >= k[i].offsets(-2)[None, :],
            ntl.dot(scaled, ntl.trans(k[i])),
            float("-inf"),
        )
        new_peak = ntl.maximum(peak, ntl.max(scores, 1))
        weights = ntl.exp2(scores - new_peak[:, None])
        decay = ntl.exp2(peak - new_peak)
        total = total * decay + ntl.sum(weights, 1)
        out = ntl.dot(weights.to(v.dtype.dtype), v[i], out * decay[:, None])
        peak = new_peak
    o = out / total[:, None]  # noqa: F841
    lse = (peak + ntl.log2(total))[:, None]  # noqa: F841


def dk_dv_arrangement(q, k, v, scale, do, lse, delta, dk, dv):
    k_arranged = _rows(k, BN)
    count = k_arranged.shape[-2]
    return (
        _walk(q, BM, count),
        k_arranged,
        _rows(v, BN),
        scale,
        _walk(do, BM, count),
        _walk(lse, BM, count),
        _walk(delta, BM, count),
        _rows(dk, BN),
        _rows(dv, BN),
    )


def dk_dv_application(q, k, v, scale, do, lse, delta, dk, dv):
    dk_acc = ntl.zeros((k.shape[-2], k.shape[-1]), dtype=ntl.float32)
    dv_acc = ntl.zeros((v.shape[-2], v.shape[-1]), dtype=ntl.float32)
    for j in range(q.shape[0]):
        qk = ntl.dot(q[j], ntl.trans(k)) * (scale * LOG2E)
        causal = q[j].offsets(-2)[:, None] >= k.offsets(-2)[None, :]
        p = ntl.where(causal, ntl.exp2(qk - lse[j]), 0.0)
        dv_acc += ntl.dot(ntl.trans(p).to(do.dtype.dtype), do[j])
        dp = ntl.dot(do[j], ntl.trans(v))
        ds = p * (dp - delta[j])
        dk_acc += ntl.dot(ntl.trans(ds).to(q.dtype.dtype), q[j])
    dk = dk_acc * scale  # noqa: F841
    dv = dv_acc  # noqa: F841


def dq_arrangement(q, k, v, scale, do, lse, delta, dq):
    return _query_programs(q, (k, v), scale, (do, lse, delta, dq))


def dq_application(q, k, v, scale, do, lse, delta, dq):
    dq_acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    for i in range(k.shape[0]):
        qk = ntl.dot(q, ntl.trans(k[i])) * (scale * LOG2E)
        causal = q.offsets(-2)[:, None] >= k[i].offsets(-2)[None, :]
        p = ntl.where(causal, ntl.exp2(qk - lse), 0.0)
        dp = ntl.dot(do, ntl.trans(v[i]))
        ds = p * (dp - delta)
        dq_acc += ntl.dot(ds.to(k.dtype.dtype), k[i])
    dq = dq_acc * scale  # noqa: F841


def _tensors(kinds):
    """``"t"``: a ``(B, H, S, D)`` tensor; ``"v"``: a ``(B, H, S, 1)`` row vector; 0: a scalar."""
    made = {
        "t": lambda: Tensor(4, shape_options=SHAPE_OPTIONS),
        "v": lambda: Tensor(shape=(None, None, None, 1)),
    }
    return tuple(made[kind]() if kind != 0 else Tensor(0) for kind in kinds)


class FlashAttention:
    """The three kernels and the differentiable ``attention(q, k, v, scale) -> (o, lse)``."""

    def __init__(self, configs=None):
        # At most 12 configurations each when tuned: every compile takes a second or two.
        options = {"max_num_configs": 12} if configs is None else {"configs": configs}
        self.forward = ninetoothed.make(
            forward_arrangement,
            forward_application,
            _tensors(("t", "t", "t", 0, "t", "v")),
            name="flash_attention_forward",
            **options,
        )
        self.backward_dk_dv = ninetoothed.make(
            dk_dv_arrangement,
            dk_dv_application,
            _tensors(("t", "t", "t", 0, "t", "v", "v", "t", "t")),
            name="flash_attention_backward_dk_dv",
            **options,
        )
        self.backward_dq = ninetoothed.make(
            dq_arrangement,
            dq_application,
            _tensors(("t", "t", "t", 0, "t", "v", "v", "t")),
            name="flash_attention_backward_dq",
            **options,
        )
        # lse in float32 whatever q's dtype: half precision would blur P.
        lse_layout = {"lse": lambda q, k, v, scale: ((*q.shape[:3], 1), q, "float32")}
        self._dk_dv = ninetoothed.functional(self.backward_dk_dv)
        self._dq = ninetoothed.functional(self.backward_dq)
        self.attention = ninetoothed.differentiable(
            ninetoothed.functional(self.forward, outputs=lse_layout), self._backward
        )

    def _backward(self, inputs, outputs, grads):
        q, k, v, scale = inputs
        o, lse = outputs
        do = grads[0]
        delta = (do * o).sum(-1)[..., None]  # in do's dtype
        dk, dv = self._dk_dv(q, k, v, scale, do, lse, delta)
        dq = self._dq(q, k, v, scale, do, lse, delta)
        return dq, dk, dv, None


default = FlashAttention()
"""Auto-tuned kernels (the tests pin small tiles with their own instance)."""
forward_kernel = default.forward
backward_dk_dv_kernel = default.backward_dk_dv
backward_dq_kernel = default.backward_dq
attention_with_lse = default.attention
