"""Kernels of upstream's examples repository: RMS norm (plain and fused with a residual),
SiLU, SwiGLU and rotary position embedding."""

import functools
import os

import pytest
import torch
import torch.nn.functional as F

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


@ninetoothed.jit
def rms_norm_kernel(
    x: Tensor(2).tile((1, BLOCK_SIZE)),
    w: Tensor(2).tile((1, BLOCK_SIZE)),
    y: Tensor(2).tile((1, BLOCK_SIZE)),
    eps: Tensor(0),
):
    x_fp32 = ntl.cast(x, ntl.float32)
    y = x_fp32 * ntl.rsqrt(ntl.sum(x_fp32 * x_fp32) / x.shape[-1] + eps) * w


def rms_norm(x, w, eps):
    x_2d = x.view(-1, x.shape[-1])
    y_2d = torch.full_like(x_2d, float("nan"))
    rms_norm_kernel(x_2d, w.expand_as(x_2d), y_2d, eps, BLOCK_SIZE=x.shape[-1])
    return y_2d.view(x.shape)


def test_rms_norm_with_a_power_of_two_width():
    x = torch.randn(3, 5, 64, device=DEVICE)
    w = torch.randn(64, device=DEVICE)

    y = rms_norm(x, w, 1e-5)

    torch.testing.assert_close(y, F.rms_norm(x, (64,), w, 1e-5), rtol=1e-4, atol=1e-5)


def test_rms_norm_with_a_width_that_is_not_a_power_of_two():
    x = torch.randn(7, 100, device=DEVICE)
    w = torch.randn(100, device=DEVICE)

    y = rms_norm(x, w, 1e-5)

    torch.testing.assert_close(y, F.rms_norm(x, (100,), w, 1e-5), rtol=1e-4, atol=1e-5)


def fused_arrangement(x, residual, w, eps, y, residual_out, BLOCK_SIZE=BLOCK_SIZE):
    def arrange(tensor):
        return tensor.tile((1, BLOCK_SIZE))

    return arrange(x), arrange(residual), arrange(w), eps, arrange(y), arrange(residual_out)


def fused_application(x, residual, w, eps, y, residual_out):
    total = ntl.cast(x, ntl.float32) + ntl.cast(residual, ntl.float32)
    residual_out = total
    y = total * ntl.rsqrt(ntl.sum(total * total) / x.shape[-1] + eps) * w


def test_fused_residual_rms_norm():
    tensors = (Tensor(2), Tensor(2), Tensor(2), Tensor(0), Tensor(2), Tensor(2))
    kernel = ninetoothed.make(fused_arrangement, fused_application, tensors)
    x = torch.randn(9, 32, dtype=torch.float16, device=DEVICE)
    residual = torch.randn(9, 32, dtype=torch.float16, device=DEVICE)
    w = torch.randn(32, dtype=torch.float16, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    residual_out = torch.full_like(x, float("nan"))

    kernel(x, residual, w.expand_as(x), 1e-6, y, residual_out, BLOCK_SIZE=32)

    total = x.float() + residual.float()
    torch.testing.assert_close(residual_out, total.half())
    expected = F.rms_norm(total, (32,), w.float(), 1e-6)
    torch.testing.assert_close(y.float(), expected, rtol=2e-3, atol=2e-3)


def elementwise_arrangement(*tensors, BLOCK_SIZE=BLOCK_SIZE):
    return tuple(tensor.tile((BLOCK_SIZE,)) for tensor in tensors)


def silu_application(input, output):
    input_fp32 = ntl.cast(input, ntl.float32)
    output = input_fp32 * ntl.sigmoid(input_fp32)


def swiglu_application(a, b, c):
    b_loaded = b
    gate = b_loaded * ntl.sigmoid(ntl.cast(b_loaded, ntl.float32))
    c = a * gate


def test_silu():
    kernel = ninetoothed.make(elementwise_arrangement, silu_application, (Tensor(1), Tensor(1)))
    input = torch.randn(1000, dtype=torch.float16, device=DEVICE)
    output = torch.full_like(input, float("nan"))

    kernel(input, output, BLOCK_SIZE=256)

    torch.testing.assert_close(output, F.silu(input.float()).half())


def test_swiglu():
    tensors = (Tensor(1), Tensor(1), Tensor(1))
    kernel = ninetoothed.make(elementwise_arrangement, swiglu_application, tensors)
    a = torch.randn(1000, device=DEVICE)
    b = torch.randn(1000, device=DEVICE)
    c = torch.full_like(a, float("nan"))

    kernel(a, b, c, BLOCK_SIZE=256)

    torch.testing.assert_close(c, a * F.silu(b))


def rope_arrangement(input, sin_table, cos_table, interleaved=True):
    tile_shape = (1, 1, 1, input.shape[-1] // 2)

    if interleaved:
        strides, dilation = (-1, -1, -1, 1), (1, 1, 1, 2)
    else:
        strides, dilation = None, None

    input_arranged = input.tile(tile_shape, strides=strides, dilation=dilation)
    input_arranged = input_arranged.tile((1, 1, 1, 2))
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 1, 2))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze((0, 1, 2))

    sin_table_arranged = sin_table.tile(tile_shape)
    sin_table_arranged.dtype = sin_table_arranged.dtype.squeeze((0, 1, 2))

    cos_table_arranged = cos_table.tile(tile_shape)
    cos_table_arranged.dtype = cos_table_arranged.dtype.squeeze((0, 1, 2))

    return input_arranged, sin_table_arranged, cos_table_arranged


def rope_application(input, sin_table, cos_table):
    sin = sin_table
    cos = cos_table

    first = input[0]
    second = input[1]

    input[0] = first * cos - second * sin
    input[1] = first * sin + second * cos


def rope_reference(input, sin, cos, interleaved):
    if interleaved:
        first, second = input[..., 0::2], input[..., 1::2]
    else:
        first, second = input.chunk(2, dim=-1)
    rotated = (first * cos - second * sin, first * sin + second * cos)
    if interleaved:
        return torch.stack(rotated, dim=-1).flatten(-2)
    return torch.cat(rotated, dim=-1)


@pytest.mark.parametrize("interleaved", [True, False])
def test_rotary_position_embedding(interleaved):
    batch, seq_len, heads, emb_dim = 2, 5, 3, 12
    tensors = tuple(Tensor(4, shape_options={"constexpr": True}) for _ in range(3))
    arrangement = functools.partial(rope_arrangement, interleaved=interleaved)
    kernel = ninetoothed.make(arrangement, rope_application, tensors)
    input = torch.randn(batch, seq_len, heads, emb_dim, device=DEVICE)
    angles = torch.randn(seq_len, emb_dim // 2, device=DEVICE)
    sin = angles.sin()[None, :, None, :].expand(batch, -1, heads, -1)
    cos = angles.cos()[None, :, None, :].expand(batch, -1, heads, -1)
    output = input.clone()

    kernel(output, sin, cos)

    torch.testing.assert_close(output, rope_reference(input, sin, cos, interleaved))
