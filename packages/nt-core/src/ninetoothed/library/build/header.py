"""The text of ``ninetoothed_ops.h`` (the C API) and ``ninetoothed_ops_config.h``.

The header declares the ops a build holds, each documented with what it
supports in that build (dtypes, ranks, row lengths, head sizes, the
convolution and pooling geometries), and the tensor type the ops take.
The configuration header tells ``ninetoothed_ops.c`` which ops to compile and
the limits and constants the Python ops pick kernels by.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ninetoothed.aot import DATA_TYPES
from ninetoothed.library import mm
from ninetoothed.library.build.catalogue import CONV2D_GEOMETRIES, POOL_GEOMETRIES, Options
from ninetoothed.library.ops.attention import FEW_QUERIES

__all__ = ["PROTOTYPES", "config_header", "header"]

_T = "NineToothedOpsTensor"

PROTOTYPES: dict[str, tuple[str, str]] = {
    "add": (
        f"NineToothedStream stream, {_T} input, {_T} other, {_T} output",
        "output = input + other, the inputs broadcast to the output (NumPy's rules), in "
        "float32 then rounded. Any strides; contiguous tensors of one shape any rank, "
        "others up to {max_ndim} dimensions.",
    ),
    "silu": (
        f"NineToothedStream stream, {_T} input, {_T} output",
        "output = input * sigmoid(input), in float32; shapes and strides as for add.",
    ),
    "swiglu": (
        f"NineToothedStream stream, {_T} a, {_T} b, {_T} output",
        "output = a * silu(b); shapes and strides as for add.",
    ),
    "mm": (
        f"NineToothedStream stream, {_T} input, {_T} mat2, {_T} output",
        "output (M, N) = input (M, K) @ mat2 (K, N), float32 accumulation; any strides.",
    ),
    "bmm": (
        f"NineToothedStream stream, {_T} input, {_T} mat2, {_T} output",
        "output (B, M, N) = input (B, M, K) @ mat2 (B, K, N); as mm.",
    ),
    "addmm": (
        f"NineToothedStream stream, {_T} input, {_T} mat1, {_T} mat2, double beta, "
        f"double alpha, {_T} output",
        "output (M, N) = beta * input + alpha * (mat1 @ mat2), input broadcast to (M, N) "
        "(at most 2-D); input is read even when beta is 0.",
    ),
    "conv2d": (
        f"NineToothedStream stream, {_T} input, {_T} weight, int stride_h, int stride_w, "
        f"int padding_h, int padding_w, int dilation_h, int dilation_w, {_T} output",
        "output (N, K, P, Q) = the cross-correlation of input (N, C, H, W) with weight "
        "(K, C, R, S), zero padding, by implicit GEMM; any filter size. Built for (stride, "
        "padding, dilation) = {conv2d}.",
    ),
    "max_pool2d": (
        f"NineToothedStream stream, {_T} input, int kernel_h, int kernel_w, int stride_h, "
        f"int stride_w, int padding_h, int padding_w, {_T} output",
        "output (N, C, P, Q) = the maximum of each window of input (N, C, H, W) (NaN if the "
        "window holds one; padding never wins). Built for (window, stride, padding) = {pool}.",
    ),
    "softmax": (
        f"NineToothedStream stream, {_T} input, int dim, {_T} output",
        "output = softmax of input along dim (negative: from the end), in float32; rows of "
        "up to {max_row} elements; any rank, the other dimensions of input and output one "
        "stride apart (a view of rows).",
    ),
    "rms_norm": (
        f"NineToothedStream stream, {_T} input, {_T} weight, double eps, {_T} output",
        "output = input * rsqrt(mean(input^2, last dim) + eps) * weight; weight (D,) or none "
        "(a tensor of 0 dimensions and null data); rows as for softmax.",
    ),
    "fused_add_rms_norm": (
        f"NineToothedStream stream, {_T} input, {_T} residual, {_T} weight, double eps, "
        f"{_T} output, {_T} sum",
        "sum = input + residual (rounded to the dtype), output = rms_norm(sum, weight, eps); "
        "rows as for softmax.",
    ),
    "rotary_position_embedding": (
        f"NineToothedStream stream, {_T} input, {_T} sin_, {_T} cos_, int interleaved, {_T} output",
        "output = input (B, L, H, D) rotated pairwise by the angles sin_, cos_ (L, D / 2) hold: "
        "pairs (x[2i], x[2i + 1]) when interleaved, else (x[i], x[i + D / 2]); D one of {heads}.",
    ),
    "scaled_dot_product_attention": (
        f"NineToothedStream stream, {_T} query, {_T} key, {_T} value, int is_causal, "
        f"double scale, int enable_gqa, {_T} output",
        "output = softmax(query @ key^T * scale) @ value (FlashAttention-2); query (B, H, Lq, D), "
        "key and value (B, Hkv, Lk, D), Hkv dividing H with enable_gqa; causal masks aligned "
        "top-left; scale 0 means 1 / sqrt(D); D from 16 to 256, padding to {heads}.",
    ),
}
"""Each op's C parameters and its documentation (``{...}`` filled per build)."""

_PREAMBLE = """/* ninetoothed_ops.h: NineToothed's kernel library as a C library (generated).
 *
 * Every function launches on `stream` (of the current CUDA context's device) and
 * returns NINETOOTHED_SUCCESS or an error code; ninetoothed_last_error() then says
 * why, and nothing was launched.  Outputs are allocated by the caller and passed in.
 * Every tensor of a call shares one dtype, one of: {dtypes}.  Built for {target}.
 */
#ifndef NINETOOTHED_OPS_H
#define NINETOOTHED_OPS_H

#include <stdint.h>

#include "ninetoothed.h"

#ifdef __cplusplus
extern "C" {{
#endif

/* A tensor: its device address, its rank (at most 8), one size and one stride (in
   elements, negative allowed) per dimension, and its dtype (enum NineToothedDataType). */
typedef struct {{
    void *data;
    int ndim;
    const uint64_t *shape;
    const int64_t *strides;
    int dtype;
}} NineToothedOpsTensor;
"""

_CLOSING = """
#ifdef __cplusplus
}
#endif

#endif /* NINETOOTHED_OPS_H */
"""


def _filled(text: str, options: Options) -> str:
    heads = ", ".join(map(str, options.head_dims))
    return text.format(
        max_ndim=options.max_ndim,
        max_row=options.max_row,
        heads=heads,
        conv2d="; ".join(f"{s}, {p}, {d}" for s, p, d in CONV2D_GEOMETRIES),
        pool="; ".join(f"{w}, {s}, {p}" for w, s, p in POOL_GEOMETRIES),
    )


def header(ops: Sequence[str], dtypes: Sequence[str], target: str, options: Options) -> str:
    """``ninetoothed_ops.h`` for a build of ``ops``."""
    parts = [_PREAMBLE.format(dtypes=", ".join(dtypes), target=target)]
    for op in ops:
        parameters, documentation = PROTOTYPES[op]
        text = textwrap.fill(f"{op}: {_filled(documentation, options)}", 86)
        parts.append("/* " + text.replace("\n", "\n   ") + " */")
        parts.append(f"#define NINETOOTHED_OPS_HAS_{op.upper()} 1")
        parts.append(f"NineToothedResult ninetoothed_ops_{op}({parameters});\n")
    return "\n".join(parts) + _CLOSING


def config_header(
    ops: Sequence[str], dtypes: Sequence[str], kernel_headers: Sequence[str], options: Options
) -> str:
    """``ninetoothed_ops_config.h``: what ``ninetoothed_ops.c`` compiles."""
    lines = ["/* ninetoothed_ops_config.h: generated; do not edit. */", "#include <stdint.h>"]
    lines += [f'#include "{path}"' for path in kernel_headers]
    lines += [f"#define NT_OPS_HAS_{op.upper()} 1" for op in ops]
    codes = ", ".join(str(DATA_TYPES.index(d)) for d in dtypes)
    heads = ", ".join(map(str, options.head_dims))
    lines += [
        f"#define NT_OPS_MAX_NDIM {options.max_ndim}",
        f"#define NT_OPS_MAX_ROW {options.max_row}",
        f"#define NT_OPS_THIN {mm.THIN}",
        f"#define NT_OPS_VECTOR_ROWS {mm.VECTOR_ROWS}",
        f"#define NT_OPS_VECTOR_COLUMNS {mm.VECTOR_COLUMNS}ULL",
        f"#define NT_OPS_PERSISTENT_ELEMENTS {mm.PERSISTENT_ELEMENTS}ULL",
        f"#define NT_OPS_FEW_QUERIES {FEW_QUERIES}",
        f"#define NT_OPS_DTYPE_COUNT {len(dtypes)}",
        f"static const int nt_ops_dtypes[] __attribute__((unused)) = {{{codes}}};",
        f"#define NT_OPS_HEAD_COUNT {len(options.head_dims)}",
        f"static const int nt_ops_heads[] __attribute__((unused)) = {{{heads}}};",
        "",
    ]
    return "\n".join(lines)
