"""The matrix-multiplication ops: ``mm``, ``bmm``, ``addmm`` and ``conv2d``.

Each runs one kernel when its output has enough tiles to fill the GPU, and
split-K's two (:mod:`~ninetoothed.library.ops.split`) when it has not:
decoding's products of a few rows, small convolutions.  ``mm``, ``bmm`` and
``addmm`` of large outputs take the kernel's persistent variant
(:func:`ninetoothed.library.mm.uses_persistent`), and those of a few rows and
columns its vector form (:func:`ninetoothed.library.mm.vector_tallest`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ninetoothed.errors import LaunchError
from ninetoothed.library import addmm as addmm_kernel
from ninetoothed.library import bmm as bmm_kernel
from ninetoothed.library import conv2d as conv2d_kernel
from ninetoothed.library import mm as mm_kernel
from ninetoothed.library import mm_split
from ninetoothed.library.ops import _common as common
from ninetoothed.library.ops import split
from ninetoothed.library.ops._precision import products, reads_products
from ninetoothed.library.ops.framework import Framework, HostTensor
from ninetoothed.library.ops.kernels import kernel

__all__ = ["addmm", "bmm", "conv2d", "mm"]


def _inner(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> None:
    """``a @ b`` is defined: the inner sizes (and any batch sizes) agree."""
    if a[-1] != b[-2] or a[:-2] != b[:-2]:
        raise LaunchError(f"{op}: cannot multiply shapes {a} and {b}")


def _vector(tallest: int | None, batch: int, rows: int, columns: int) -> int | None:
    """``tallest``, or the vector form's (:func:`~ninetoothed.library.mm.vector_tallest`)
    for an unsplit output it serves: split-K's kernel has no vector form (and thin
    outputs are split only when a test pins it)."""
    vector = mm_kernel.vector_tallest(batch, rows, columns)
    return tallest if vector is None else vector


@reads_products
def mm(framework: Framework, input: HostTensor, mat2: HostTensor) -> HostTensor:
    """``input @ mat2`` for 2-D (M, K) and (K, N) tensors, in a new (M, N) tensor (like
    ``torch.mm``).

    Float16, bfloat16 or float32, both the same; any strides (a transposed
    weight too); float32 accumulation.  Float32 products are rounded to TF32 on
    the GPU only where the framework's setting allows it
    (:mod:`~ninetoothed.library.ops._precision`).
    """
    infos = common.describe(framework, "mm", input=input, mat2=mat2)
    a, b = infos["input"].shape, infos["mat2"].shape
    common.rank("mm", "input", infos["input"], 2)
    common.rank("mm", "mat2", infos["mat2"], 2)
    _inner("mm", a, b)
    precision = products(framework, infos["input"].dtype)
    tallest = mm_kernel.tallest_block(a[0])
    count = split.splits(1, a[0], b[1], a[1], tallest)
    if count > 1:
        found = kernel(mm_split, ndim=2, tallest=tallest, **precision)
        parts = split.partial_products(framework, found, [input, mat2], (a[0], b[1]), count)
        return split.total(framework, parts, input, (a[0], b[1]))
    persistent = mm_kernel.uses_persistent(1, a[0], b[1])
    tallest = _vector(tallest, 1, a[0], b[1])
    found = kernel(mm_kernel, ndim=2, tallest=tallest, persistent=persistent, **precision)
    (output,) = framework.run(found, [input, mat2, framework.empty(input, (a[0], b[1]))], [2])
    return output


@reads_products
def bmm(framework: Framework, input: HostTensor, mat2: HostTensor) -> HostTensor:
    """``input @ mat2`` for 3-D (B, M, K) and (B, K, N) tensors, in a new (B, M, N) tensor
    (like ``torch.bmm``); dtypes and strides as for :func:`mm`."""
    infos = common.describe(framework, "bmm", input=input, mat2=mat2)
    a, b = infos["input"].shape, infos["mat2"].shape
    common.rank("bmm", "input", infos["input"], 3)
    common.rank("bmm", "mat2", infos["mat2"], 3)
    _inner("bmm", a, b)
    precision = products(framework, infos["input"].dtype)
    tallest = mm_kernel.tallest_block(a[1])
    shape = (a[0], a[1], b[2])
    count = split.splits(a[0], a[1], b[2], a[2], tallest)
    if count > 1:
        found = kernel(mm_split, ndim=3, tallest=tallest, **precision)
        parts = split.partial_products(framework, found, [input, mat2], shape, count)
        return split.total(framework, parts, input, shape)
    persistent = mm_kernel.uses_persistent(*shape)
    tallest = _vector(tallest, *shape)
    found = kernel(bmm_kernel, tallest=tallest, persistent=persistent, **precision)
    output = framework.empty(input, shape)
    return framework.run(found, [input, mat2, output], [2])[0]


@reads_products
def addmm(
    framework: Framework,
    input: HostTensor,
    mat1: HostTensor,
    mat2: HostTensor,
    *,
    beta: float = 1.0,
    alpha: float = 1.0,
) -> HostTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` in a new (M, N) tensor (like
    ``torch.addmm``).

    ``input`` broadcasts to (M, N) (a bias of shape (N,), for instance); dtypes
    and strides as for :func:`mm`.  Unlike torch, ``input`` is read even when
    ``beta`` is 0.
    """
    infos = common.describe(framework, "addmm", input=input, mat1=mat1, mat2=mat2)
    a, b = infos["mat1"].shape, infos["mat2"].shape
    common.rank("addmm", "mat1", infos["mat1"], 2)
    common.rank("addmm", "mat2", infos["mat2"], 2)
    _inner("addmm", a, b)
    shape = (a[0], b[1])
    bias = infos["input"].shape
    if len(bias) > 2 or common.broadcast_shapes("addmm", bias, shape) != shape:
        raise LaunchError(f"addmm: input of shape {bias} does not broadcast to {shape}")
    pattern, tallest = common.pattern(bias, shape), mm_kernel.tallest_block(a[0])
    precision = products(framework, infos["mat1"].dtype)
    count = split.splits(1, a[0], b[1], a[1], tallest)
    if count > 1:
        found = kernel(mm_split, ndim=2, tallest=tallest, **precision)
        parts = split.partial_products(framework, found, [mat1, mat2], shape, count)
        return split.total_addmm(
            framework, parts, input, pattern, (float(beta), float(alpha)), shape
        )
    persistent = mm_kernel.uses_persistent(1, *shape)
    tallest = _vector(tallest, 1, *shape)
    found = kernel(
        addmm_kernel, input_pattern=pattern, tallest=tallest, persistent=persistent, **precision
    )
    arguments = [input, mat1, mat2, float(beta), float(alpha), framework.empty(mat1, shape)]
    return framework.run(found, arguments, [5])[0]


def _output_size(size: int, window: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (window - 1) - 1) // stride + 1


@reads_products
def conv2d(
    framework: Framework,
    input: HostTensor,
    weight: HostTensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
) -> HostTensor:
    """2-D convolution (cross-correlation) of an (N, C, H, W) input with a (K, C, R, S)
    filter, in a new (N, K, P, Q) tensor (like ``torch.nn.functional.conv2d``
    without bias and groups), by implicit GEMM.

    ``stride``, ``padding`` (zeros) and ``dilation``: an int or a pair.  Float16,
    bfloat16 or float32, both the same; any strides.
    """
    infos = common.describe(framework, "conv2d", input=input, weight=weight)
    common.rank("conv2d", "input", infos["input"], 4)
    common.rank("conv2d", "weight", infos["weight"], 4)
    (n, c, h, w), (k, c_filter, r, s) = infos["input"].shape, infos["weight"].shape
    if c != c_filter:
        raise LaunchError(f"conv2d: input has {c} channels, the filter {c_filter}")
    if c == 0:
        # torch returns an (N, 0, P, Q) tensor here, not the (N, K, P, Q) zeros a sum
        # over no channels would be: refused rather than either.
        raise LaunchError(
            f"conv2d: input of shape {infos['input'].shape} has no channels (weight "
            f"{infos['weight'].shape}); a convolution needs at least one"
        )
    steps, pads = common.pair("conv2d", "stride", stride), common.pair("conv2d", "padding", padding)
    spacing = common.pair("conv2d", "dilation", dilation)
    if 0 in steps or 0 in spacing:
        raise LaunchError("conv2d: stride and dilation must be positive")
    p = _output_size(h, r, steps[0], pads[0], spacing[0])
    q = _output_size(w, s, steps[1], pads[1], spacing[1])
    if p <= 0 or q <= 0:
        raise LaunchError(f"conv2d: the filter ({r}, {s}) does not fit the input ({h}, {w})")
    variant: dict[str, object] = {"stride": steps, "padding": pads, "dilation": spacing}
    variant |= products(framework, infos["input"].dtype)
    count = split.splits(1, n * p * q, k, c * r * s, tile=split.CONVOLUTION_TILE)
    if count > 1:
        found = kernel(conv2d_kernel, split=True, **variant)
        parts = split.partial_products(framework, found, [input, weight], (n, k, p, q), count)
        return split.total(framework, parts, input, (n, k, p, q))
    found = kernel(conv2d_kernel, **variant)
    output = framework.empty(input, (n, k, p, q))
    return framework.run(found, [input, weight, output], [2])[0]
