"""The attention ops: ``scaled_dot_product_attention`` and ``rotary_position_embedding``."""

from __future__ import annotations

import math
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.library import rotary_position_embedding as rope_kernel
from ninetoothed.library import scaled_dot_product_attention as sdpa_kernel
from ninetoothed.library import scaled_dot_product_attention_backward as backward_kernel
from ninetoothed.library.ops import _common as common
from ninetoothed.library.ops import decoding
from ninetoothed.library.ops._precision import products, reads_products
from ninetoothed.library.ops.framework import Framework, HostTensor
from ninetoothed.library.ops.kernels import kernel

__all__ = [
    "FEW_QUERIES",
    "rotary_position_embedding",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
    "scaled_dot_product_attention_with_lse",
]

FEW_QUERIES = 16
"""Query lengths up to this take the decoding kernel (one fixed configuration)."""


@reads_products
def scaled_dot_product_attention(
    framework: Framework,
    query: HostTensor,
    key: HostTensor,
    value: HostTensor,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> HostTensor:
    """``softmax(query @ key.T * scale) @ value`` in a new tensor, FlashAttention-2's way
    (like ``torch.nn.functional.scaled_dot_product_attention`` without a mask or
    dropout).

    ``query`` (B, H, Lq, D), ``key`` and ``value`` (B, H_kv, Lk, D): any lengths,
    D from 16 to 256; with ``enable_gqa``, H_kv may divide H (grouped-query
    attention).  ``is_causal`` masks aligned top-left, as torch does; ``scale``
    defaults to ``1 / sqrt(D)``.  Float16, bfloat16 or float32, all the same;
    any strides; float32 products as the framework's setting says (see ``mm``).
    With PyTorch on a Hopper GPU, long calls at heads of 128 in float16 or
    bfloat16 run a warp-specialised kernel written in Gluon instead, eagerly
    and under ``torch.compile``, once it has compiled in the background (the
    calls before take this one; ``nt_triton.hopper_attention``;
    ``NINETOOTHED_HOPPER_ATTENTION=off`` keeps this one).
    """
    found, scale, shape = _sdpa(framework, query, key, value, is_causal, scale, enable_gqa)
    if shape[2] <= FEW_QUERIES and not is_causal:
        described = framework.describe(key)
        split = decoding.attend(
            framework,
            (query, key, value, scale),
            shape,
            described.shape[1],
            _bound(shape[3]),
            products(framework, described.dtype),
        )
        if split is not None:
            return split
    arguments = [query, key, value, scale, bool(is_causal), framework.empty(query, shape)]
    return framework.run(found, arguments, [5])[0]


def scaled_dot_product_attention_with_lse(
    framework: Framework,
    query: Any,
    key: Any,
    value: Any,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> tuple[Any, Any]:
    """:func:`scaled_dot_product_attention` and each query row's log-sum-exp, a float32
    (B, H, Lq) tensor (base 2, of the scores times ``scale * log2(e)``): what its
    backward recomputes the probabilities from."""
    found, scale, shape = _sdpa(framework, query, key, value, is_causal, scale, enable_gqa, True)
    lse = framework.empty(query, shape[:3], "float32")
    arguments = [query, key, value, scale, bool(is_causal), framework.empty(query, shape), lse]
    output, lse = framework.run(found, arguments, [5, 6])
    return output, lse


def _sdpa(
    framework: Framework,
    query: Any,
    key: Any,
    value: Any,
    is_causal: bool,
    scale: float | None,
    enable_gqa: bool,
    lse: bool = False,
) -> tuple[Any, float, tuple[int, int, int, int]]:
    """Check the arguments; the kernel, the scale and the output's shape."""
    op = "scaled_dot_product_attention"
    infos = common.describe(framework, op, query=query, key=key, value=value)
    for name, info in infos.items():
        common.rank(op, name, info, 4)
    (b, h, lq, d), (bk, h_kv, _, dk) = infos["query"].shape, infos["key"].shape
    if infos["value"].shape != infos["key"].shape or (bk, dk) != (b, d):
        raise LaunchError(
            f"{op}: shapes do not match: {', '.join(str(i.shape) for i in infos.values())}"
        )
    if h_kv != h and not (enable_gqa and h_kv and h % h_kv == 0):
        raise LaunchError(
            f"{op}: {h} query heads and {h_kv} key/value heads need enable_gqa=True and "
            "key/value heads that divide the query heads"
        )
    if not 16 <= d <= 256:
        raise LaunchError(f"{op}: the head dimension must be from 16 to 256, got {d}")
    # One kernel per power-of-two bound of the head dimension (16 … 256): its
    # tuning space is sized for the heads it gets, not for the largest.
    # bool(): on a tracer's symbolic sizes (torch.compile with dynamic shapes) a
    # comparison is symbolic; the tracer decides it (a guard) and the variant is a constant.
    variant = {
        "gqa": bool(h_kv != h),
        "few_queries": bool(lq <= FEW_QUERIES),
        "head_bound": _bound(d),
        **products(framework, infos["query"].dtype),
    }
    found = kernel(sdpa_kernel, **variant, **({"lse": True} if lse else {}))
    return found, 1 / math.sqrt(d) if scale is None else float(scale), (b, h, lq, d)


def _bound(head: int) -> int:
    """The power of two at or above ``head``."""
    return 1 << (head - 1).bit_length()


def scaled_dot_product_attention_backward(
    framework: Framework,
    query: Any,
    key: Any,
    value: Any,
    output: Any,
    lse: Any,
    grad: Any,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[Any, Any, Any]:
    """The gradients ``(dq, dk, dv)`` of :func:`scaled_dot_product_attention` given the
    gradient ``grad`` of its ``output``, FlashAttention-2's way, from the
    forward's ``lse`` (:func:`scaled_dot_product_attention_with_lse`).

    Three kernels (:mod:`~ninetoothed.library.scaled_dot_product_attention_backward`):
    ``delta = rowsum(grad * output)``, then ``dk, dv`` per key block and ``dq``
    per query block.  With grouped heads, ``dk`` and ``dv`` are computed per
    query head and summed over each group.
    """
    (b, h, lq, d), (_, h_kv, lk, _) = _shape(framework, query), _shape(framework, key)
    scale = 1 / math.sqrt(d) if scale is None else float(scale)
    causal = bool(is_causal)
    variant: dict[str, object] = {"gqa": bool(h_kv != h), "head_bound": _bound(d)}  # see _sdpa
    variant |= products(framework, framework.describe(query).dtype)
    delta = framework.empty(query, (b, h, lq), "float32")
    (delta,) = framework.run(
        kernel(backward_kernel, part="delta", head_bound=_bound(d)), [output, grad, delta], [2]
    )
    common_arguments = [query, key, value, scale, causal, grad, lse, delta]
    dk, dv = framework.run(
        kernel(backward_kernel, part="dk_dv", **variant),
        [
            *common_arguments,
            framework.empty(query, (b, h, lk, d)),
            framework.empty(query, (b, h, lk, d)),
        ],
        [8, 9],
    )
    (dq,) = framework.run(
        kernel(backward_kernel, part="dq", **variant),
        [*common_arguments, framework.empty(query, (b, h, lq, d))],
        [8],
    )
    if h_kv != h:  # per query head -> per key/value head
        grouped = (b, h_kv, h // h_kv, lk, d)
        dk, dv = (framework.reshape(t, grouped).sum(2) for t in (dk, dv))
    return dq, dk, dv


def _shape(framework: Framework, tensor: Any) -> tuple[int, ...]:
    return tuple(framework.describe(tensor).shape)


def rotary_position_embedding(
    framework: Framework,
    input: HostTensor,
    sin: HostTensor,
    cos: HostTensor,
    interleaved: bool = True,
) -> HostTensor:
    """``input`` (B, L, H, D) rotated pairwise by the angles whose sines and cosines
    ``sin`` and ``cos`` (L, D / 2) hold, in a new tensor.

    The pairs are ``(x[2i], x[2i + 1])`` when ``interleaved``, else ``(x[i],
    x[i + D / 2])`` (half-split, Llama's layout).  D even; float16, bfloat16 or
    float32, all the same (computed in float32); any strides.
    """
    op = "rotary_position_embedding"
    infos = common.describe(framework, op, input=input, sin=sin, cos=cos)
    common.rank(op, "input", infos["input"], 4)
    shape = infos["input"].shape
    length, dim = shape[1], shape[3]
    if (
        dim % 2
        or infos["sin"].shape != (length, dim // 2)
        or infos["cos"].shape != (length, dim // 2)
    ):
        raise LaunchError(
            f"{op}: input {shape} needs an even last dimension and sin, cos of shape "
            f"({length}, {dim // 2}); got {infos['sin'].shape}, {infos['cos'].shape}"
        )
    found = kernel(rope_kernel, interleaved=bool(interleaved))
    return framework.run(found, [input, sin, cos, framework.empty(input, shape)], [3])[0]
