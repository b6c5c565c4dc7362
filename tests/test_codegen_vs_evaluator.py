"""Generated loads read exactly what the reference evaluator says.

For a random arrangement of ``x``, a copy kernel stores each program's tile
of ``x`` into an output laid out as the arranged hierarchy itself (outermost
level first).  ``x`` holds each element's flat index and reads ``-1`` where
masked, so the output must equal the evaluator's source indices where its
mask is set and ``-1`` elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from support.base import ON_GPU

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.arrangement.reference import evaluate

DEVICE = "cuda" if ON_GPU else "cpu"


def application(x, o):
    o = x  # noqa: F841


def copy_kernel(arrange: Any, source_shape: tuple[int, ...]) -> tuple[Any, Any]:
    """A kernel copying the level-1 tiles of ``arrange(x)`` into a hierarchy-shaped output."""
    probe = arrange(Tensor(shape=source_shape))
    outer, inner = probe.shape, probe.dtype.shape
    output_shape = (*outer, *inner)

    def arrangement(x, o):
        arranged_o = o.tile((1,) * len(outer) + tuple(inner))
        if inner:
            arranged_o = arranged_o.squeeze(tuple(range(len(outer), len(output_shape))))
        if outer:
            arranged_o.dtype = arranged_o.dtype.squeeze(tuple(range(len(outer))))
        return arrange(x), arranged_o

    tensors = (Tensor(shape=source_shape, other=-1), Tensor(shape=output_shape))
    return ninetoothed.make(arrangement, application, tensors), probe


def check(arrange: Any, source_shape: tuple[int, ...]) -> None:
    kernel, probe = copy_kernel(arrange, source_shape)
    evaluation = evaluate(probe, source_shape)
    flat = np.arange(int(np.prod(source_shape)), dtype=np.float32).reshape(source_shape)
    strides = np.array([int(np.prod(source_shape[d + 1 :])) for d in range(len(source_shape))])
    expected = np.where(evaluation.mask, evaluation.indices @ strides, -1).astype(np.float32)
    output = torch.full(expected.shape, float("nan"), device=DEVICE)
    kernel(torch.from_numpy(flat).to(DEVICE), output)
    np.testing.assert_array_equal(output.cpu().numpy(), expected)


@st.composite
def arrangements(draw: st.DrawFn) -> tuple[Any, tuple[int, ...], str]:
    """A source shape and a random tile followed by meta-operations on either level."""
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    tile_shape = tuple(draw(st.integers(1, size)) for size in shape)
    strides = tuple(draw(st.integers(1, t)) for t in tile_shape)
    dilation = tuple(draw(st.integers(1, 2)) for _ in shape)
    floor_mode = draw(st.booleans())
    outer_op = draw(st.sampled_from(["none", "permute", "flatten", "reverse", "unsqueeze"]))
    inner_op = draw(st.sampled_from(["none", "permute", "flatten", "pad", "step"]))
    description = (
        f"{shape} tile{tile_shape} s{strides} d{dilation} {floor_mode} {outer_op}/{inner_op}"
    )

    def arrange(x: Tensor) -> Tensor:
        t = x.tile(tile_shape, strides=strides, dilation=dilation, floor_mode=floor_mode)
        if outer_op == "permute":
            t = t.permute(tuple(reversed(range(t.ndim))))
        elif outer_op == "flatten" and t.ndim > 1:
            t = t.flatten()
        elif outer_op == "reverse":
            t = t[::-1]
        elif outer_op == "unsqueeze":
            t = t.unsqueeze(0)
        inner = t.dtype
        if inner_op == "permute":
            inner = inner.permute(tuple(reversed(range(inner.ndim))))
        elif inner_op == "flatten" and inner.ndim > 1:
            inner = inner.flatten()
        elif inner_op == "pad":
            inner = inner.pad(tuple((1, 0) for _ in range(inner.ndim)))
        elif inner_op == "step":
            inner = inner[::2]
        t.dtype = inner
        return t

    return arrange, shape, description


# Each example compiles a new kernel: seconds on a GPU, milliseconds under the
# interpreter. The generated source is the same on both, so this runs on the CPU.
@pytest.mark.interpreter_only
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False
)
@given(arrangements())
def test_random_arrangements_load_what_the_evaluator_says(case):
    """Examples with no arrangement or an empty level are rejected (``assume``), not
    passed: should every example be rejected, Hypothesis fails the test
    (Unsatisfiable), so a run always checks kernels."""
    arrange, shape, description = case
    try:
        probe = arrange(Tensor(shape=shape))
    except ninetoothed.errors.NineToothedError:
        probe = None  # e.g. floor mode leaves no whole tile
    assume(probe is not None and 0 not in probe.shape and 0 not in probe.dtype.shape)
    event("kernel checked")
    check(arrange, shape)


def matmul_input(x: Tensor) -> Tensor:
    """matmul's input tiles, one per (row-block, k-block) program."""
    return x.tile((4, 2))


def conv2d_input(x: Tensor) -> Tensor:
    """The paper's conv2d input arrangement (im2col as a view), then matmul's tiling."""
    t = x.tile((1, 2, 2, 2), strides=(-1, -1, 1, 1))
    t = t.squeeze(1)
    t.dtype = t.dtype.squeeze(0)
    t = t.ravel()
    t = t.flatten(end_dim=3).flatten(start_dim=1)
    return t.tile((4, 8))


@pytest.mark.parametrize(
    ("arrange", "shape"), [(matmul_input, (9, 7)), (conv2d_input, (2, 2, 5, 4))]
)
def test_fixed_arrangements(arrange, shape):
    check(arrange, shape)
