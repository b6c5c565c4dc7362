"""The float8 product with scales: ``scaled_mm``, following ``torch._scaled_mm``."""

from __future__ import annotations

from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.library import mm as mm_kernel
from ninetoothed.library import scaled_mm as scaled_mm_kernel
from ninetoothed.library.ops import _common as common
from ninetoothed.library.ops.framework import Framework, HostTensor
from ninetoothed.library.ops.kernels import kernel

__all__ = ["FLOAT8", "scaled_mm"]

FLOAT8 = "float8_e4m3fn"
"""The operands' dtype (the tensor cores' float8 with 4 exponent bits)."""


def scaled_mm(
    framework: Framework,
    input: HostTensor,
    mat2: HostTensor,
    scale_a: HostTensor,
    scale_b: HostTensor,
    out_dtype: object = None,
    use_fast_accum: bool = False,
) -> HostTensor:
    """``(input * scale_a) @ (mat2 * scale_b)`` in a new (M, N) tensor of ``out_dtype``,
    as ``torch._scaled_mm`` computes it without a bias.

    ``input`` (M, K) and ``mat2`` (K, N) are float8_e4m3fn, any strides;
    ``scale_a`` and ``scale_b`` float32, either one scale each (one element:
    tensor-wise) or one per row of ``input``, (M, 1), and one per column of
    ``mat2``, (1, N) (row-wise).  The products accumulate in float32 and the
    scales apply once, to the sums.  ``out_dtype`` (float16, bfloat16 or
    float32, as a dtype or its name) defaults to bfloat16: a float8 output, as
    torch's default, is not offered.  ``use_fast_accum`` (torch's too) lets a Hopper
    GPU's tensor cores accumulate all of ``k`` in their shorter format: faster
    (about 1.5x on an H100 at 4096^3), less precise over long sums; by default each
    step's sum is added in float32.
    """
    op = "scaled_mm"
    infos = {
        name: framework.describe(t)
        for name, t in (
            ("input", input),
            ("mat2", mat2),
            ("scale_a", scale_a),
            ("scale_b", scale_b),
        )
    }
    for name in ("input", "mat2"):
        common.rank(op, name, infos[name], 2)
        if infos[name].dtype != FLOAT8:
            raise LaunchError(f"{op}: {name} must be {FLOAT8}, got {infos[name].dtype}")
    (m, k), (k2, n) = infos["input"].shape, infos["mat2"].shape
    if k != k2:
        raise LaunchError(f"{op}: cannot multiply shapes {(m, k)} and {(k2, n)}")
    if not isinstance(use_fast_accum, bool):
        raise LaunchError(
            f"{op}: use_fast_accum must be a bool, got {type(use_fast_accum).__name__}"
        )
    rowwise = _rowwise(op, infos, m, n)
    scales = (
        framework.reshape(scale_a, (m, 1) if rowwise else (1, 1)),
        framework.reshape(scale_b, (1, n) if rowwise else (1, 1)),
    )
    output = framework.empty(input, (m, n), _dtype(op, out_dtype))
    # Large outputs walk their tiles in persistent programs, as mm's do (on an H100,
    # 128 x 256 x 128 tiles so measured 0.99 of torch at 4096^3 against 0.71 for the
    # best one-program-per-tile form: scaled_mm.PERSISTENT_CONFIGS).
    persistent = mm_kernel.uses_persistent(1, m, n)
    found = kernel(
        scaled_mm_kernel, rowwise=rowwise, persistent=persistent, fast_accum=use_fast_accum
    )
    return framework.run(found, [input, mat2, *scales, output], [4])[0]


def _rowwise(op: str, infos: dict[str, Any], m: int, n: int) -> bool:
    """Whether the scales are row-wise (else tensor-wise); refuses anything else."""
    a, b = infos["scale_a"], infos["scale_b"]
    for name in ("scale_a", "scale_b"):
        if infos[name].dtype != "float32":
            raise LaunchError(f"{op}: {name} must be float32, got {infos[name].dtype}")
    if common.numel(a.shape) == 1 and common.numel(b.shape) == 1:
        return False
    if tuple(a.shape) == (m, 1) and tuple(b.shape) == (1, n):
        return True
    raise LaunchError(
        f"{op}: scale_a and scale_b must both have one element (tensor-wise) or shapes "
        f"({m}, 1) and (1, {n}) (row-wise); got {tuple(a.shape)} and {tuple(b.shape)}"
    )


def _dtype(op: str, out_dtype: object) -> str:
    """The output dtype's name: ``torch.float16``, ``paddle.float16``, ``jnp.float16``
    (``<class 'jax.numpy.float16'>``), a numpy dtype and ``"float16"`` all name
    ``float16``."""
    if out_dtype is None:
        return "bfloat16"
    text = str(out_dtype).removeprefix("<class '").removesuffix("'>")
    name = text.rsplit(".", 1)[-1]
    if name not in common.FLOATS:
        raise LaunchError(
            f"{op}: out_dtype must be one of {', '.join(common.FLOATS)}, got {out_dtype}"
        )
    return name
