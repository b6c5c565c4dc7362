"""Under ``torch.compile``, the library's element-wise and row-wise kernels as PyTorch's
ops, which Inductor fuses (``nt_torch.fusion``); products stay our kernels.

On the CPU, as in ``test_compiled_inductor.py``: Triton's JIT mode and CPU
tensors taken for GPU ones.  The graphs AOTAutograd hands a compiler are read
(:func:`trace`), and graphs of composites alone run under ``aot_eager`` (the
graph's PyTorch ops, on the CPU) against float64 references.  What Inductor
fuses on the GPU: ``tests/test_compiled_inductor_gpu.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from support.blocks import block
from support.library import tolerance
from support.traced_graphs import kernel_of, launches, trace
from torch._dynamo.utils import counters

from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import kernels
from nt_torch import fusion, inductor, ops

pytestmark = pytest.mark.interpreter_only  # CPU tensors posing as GPU ones

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def _rms(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _rope(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """Pairs as complex numbers times ``cos + i sin`` (float64)."""
    half = x.shape[-1] // 2
    if interleaved:
        pairs = torch.complex(x[..., 0::2], x[..., 1::2])
    else:
        pairs = torch.complex(x[..., :half], x[..., half:])
    rotated = pairs * torch.complex(cos, sin)[None, :, None, :]
    if interleaved:
        return torch.stack((rotated.real, rotated.imag), dim=-1).flatten(-2)
    return torch.cat((rotated.real, rotated.imag), dim=-1)


CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], list[tuple[int, ...]]]] = {
    # name: (our op, its float64 reference, the input shapes)
    "add": (ops.add, torch.add, [(37, 65), (37, 65)]),
    "add, broadcast": (ops.add, torch.add, [(3, 1, 33), (5, 1)]),
    "silu": (ops.silu, torch.nn.functional.silu, [(3, 130)]),
    "swiglu": (ops.swiglu, lambda a, b: a * torch.nn.functional.silu(b), [(70,), (70,)]),
    "rms_norm": (ops.rms_norm, lambda x, w: _rms(x) * w, [(5, 3, 200), (200,)]),
    "rms_norm, unweighted": (ops.rms_norm, _rms, [(9, 1)]),
    "rms_norm, eps": (
        lambda x, w: ops.rms_norm(x, w, eps=0.5),
        lambda x, w: _rms(x, 0.5) * w,
        [(4, 48), (48,)],
    ),
    "softmax": (ops.softmax, lambda x: torch.softmax(x, -1), [(6, 257)]),
    "rope, half-split": (
        lambda x, sin, cos: ops.rotary_position_embedding(x, sin, cos, interleaved=False),
        lambda x, sin, cos: _rope(x, sin, cos, False),
        [(2, 5, 3, 16), (5, 8), (5, 8)],
    ),
    "rope, interleaved": (
        ops.rotary_position_embedding,
        lambda x, sin, cos: _rope(x, sin, cos, True),
        [(1, 7, 2, 6), (7, 3), (7, 3)],
    ),
    "softmax, dim 0": (
        lambda x: ops.softmax(x, dim=0),
        lambda x: torch.softmax(x, 0),
        [(33, 4)],
    ),
}


def _random(shape: tuple[int, ...], dtype: torch.dtype, transposed: bool) -> torch.Tensor:
    if transposed and len(shape) >= 2:  # the first and last dimensions' strides swapped
        swapped = (shape[-1], *shape[1:-1], shape[0])
        return torch.randn(swapped, dtype=torch.float64).to(dtype).transpose(0, -1)
    return torch.randn(shape, dtype=torch.float64).to(dtype)


def _relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert not actual.isnan().any(), "NaN in the output"
    norm = float(expected.norm()) or 1.0
    return float((actual.double() - expected).norm()) / norm


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_composite_computes_what_the_op_does(
    as_on_gpu: list[Any], case: str, transposed: bool, dtype: str
) -> None:
    op, reference, shapes = CASES[case]
    inputs = [_random(shape, DTYPES[dtype], transposed) for shape in shapes]
    compiled = torch.compile(op, backend="aot_eager", fullgraph=True)
    result = compiled(*inputs)
    assert result.dtype == inputs[0].dtype
    expected = reference(*(t.double() for t in inputs))
    assert _relative_error(result, expected) < tolerance(dtype), case
    assert counters["stats"]["unique_graphs"] == 1


def test_fused_add_rms_norm_normalises_the_rounded_sum(as_on_gpu: list[Any]) -> None:
    x, residual = torch.randn(2, 7, 96).half(), torch.randn(2, 7, 96).half()
    weight = torch.randn(96).half()
    compiled = torch.compile(ops.fused_add_rms_norm, backend="aot_eager", fullgraph=True)
    normalised, total = compiled(x, residual, weight, 1e-5)
    rounded = (x.double() + residual.double()).half()
    assert torch.equal(total, rounded)  # rounded once, as the kernel stores it
    expected = _rms(rounded.double(), 1e-5) * weight.double()
    assert _relative_error(normalised, expected) < tolerance("float16")


@pytest.mark.parametrize("shape", [(0, 8), (1, 1), (3, 0)])
def test_edge_shapes(as_on_gpu: list[Any], shape: tuple[int, ...]) -> None:
    x = torch.randn(shape).half()
    weight = torch.randn(shape[-1]).half()

    def function(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return ops.add(ops.silu(ops.rms_norm(x, weight)), x)

    result = torch.compile(function, backend="aot_eager", fullgraph=True)(x, weight)
    x64 = x.double()
    activated = torch.nn.functional.silu(_rms(x64) * weight.double())
    expected = activated + x64
    assert result.shape == expected.shape and not result.isnan().any()
    # Relative to the summands, not the sum: a (1, 1) row's two terms may nearly cancel,
    # and each op rounds its float16 output before the add (seen: 0.0054 of the sum).
    scale = max(float(activated.norm()), float(x64.norm())) or 1.0
    assert float((result.double() - expected).norm()) / scale < tolerance("float16")


def test_the_block_hands_inductor_only_its_product(as_on_gpu: list[Any]) -> None:
    """rms_norm, silu and add become PyTorch's ops (which Inductor fuses); mm stays ours."""
    x, weight, b = torch.randn(40, 48), torch.randn(48), torch.randn(48, 48)
    with pinned_block_sizes(16):
        trace(as_on_gpu, block, (x, weight, b), fullgraph=True)
    (graph,) = as_on_gpu
    assert "auto_functionalized" not in graph.code
    assert [kernel_of(node).__name__ for node in launches(graph)] == ["mm_kernel"]
    for op in ("aten.rsqrt", "aten.silu", "aten.add"):
        assert op in graph.code, op


@pytest.mark.parametrize("knob", ["off", "0", "False"])
def test_the_knob_turns_fusion_off(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch, knob: str
) -> None:
    monkeypatch.setenv(fusion.KNOB, knob)
    with pinned_block_sizes(16):  # no tuning (it would launch on the CPU tensors)
        trace(as_on_gpu, ops.silu, (torch.randn(40, 48),), fullgraph=True)
    assert [kernel_of(node).__name__ for node in launches(as_on_gpu[0])] == ["silu_kernel"]


def test_without_the_hand_over_every_kernel_keeps_the_generic_operator(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(inductor.KNOB, "operator")
    trace(as_on_gpu, ops.silu, (torch.randn(40, 48),), fullgraph=True)
    assert "auto_functionalized" in as_on_gpu[0].code
    assert "aten.silu" not in as_on_gpu[0].code


def test_kernels_the_library_did_not_make_have_no_composite(as_on_gpu: list[Any]) -> None:
    x, weight, b = torch.randn(40, 48), torch.randn(48), torch.randn(48, 48)
    with pinned_block_sizes(16):
        trace(as_on_gpu, block, (x, weight, b), fullgraph=True)  # makes the kernels
    expected = {"rms_norm": True, "silu": True, "add": True, "mm": False}
    for op, has_one in expected.items():
        found = kernels.made(op)
        assert found, op
        assert all((fusion.composite(k.generated) is not None) is has_one for k in found), op
    assert kernels.origin("/nowhere/kernel.py") is None
    origins = [kernels.origin(k.source_path) for k in kernels.made("rms_norm")]
    assert ("rms_norm", {"ndim": 2, "num_warps": 4, "weighted": True}) in origins


def test_dynamic_shapes_compile_once(as_on_gpu: list[Any]) -> None:
    """Composites carry no constexpr of the sizes: one graph serves every size."""

    def function(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return ops.add(ops.silu(ops.rms_norm(x, weight)), x)

    compiled = torch.compile(function, backend="aot_eager", dynamic=True, fullgraph=True)
    for rows in (3, 17, 64, 100, 129):
        x, weight = torch.randn(rows, 32), torch.randn(32)
        expected = torch.nn.functional.silu(_rms(x.double()) * weight.double()) + x.double()
        assert _relative_error(compiled(x, weight), expected) < tolerance("float32")
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
