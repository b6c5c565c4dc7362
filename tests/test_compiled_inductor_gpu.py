"""On a GPU, Inductor launches our kernels itself (``nt_torch.inductor``).

Run with ``python3 tools/gpu_tests.py tests/test_compiled_inductor_gpu.py``
(``NT_TEST_GPU=1``); the hand-over is the default, which these tests run
(``NINETOOTHED_COMPILED_LAUNCH`` unset).  Each compiled function's generated
code must launch our Triton kernels (our element-wise and row-wise library
kernels fused by Inductor instead: ``nt_torch.fusion``), with no
``ninetoothed::launch`` and no ``auto_functionalized`` left, no more launches
than torch's ops compiled, zero graph breaks, results against float64 references, gradients equal
to eager ones, CUDA graphs under ``mode="reduce-overhead"``, and dynamic
shapes without one recompile per call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from support.base import ON_GPU
from support.blocks import block, reference, torch_block
from support.traced_graphs import kernel_of, launches, trace
from support.tutorial import add
from support.tutorial import differentiable as examples
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

import ninetoothed
import nt_torch
from ninetoothed import Tensor
from nt_torch import fusion, inductor, ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not (ON_GPU and torch.cuda.is_available()), reason="needs a CUDA GPU"),
]


@pytest.fixture(autouse=True)
def fresh_compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The hand-over as by default (``NINETOOTHED_COMPILED_LAUNCH`` unset), and every
    compile traces: a graph found in PyTorch's compile caches (AOTAutograd's,
    Inductor's: kept on disk from an earlier run, keyed by Dynamo's graph, which
    either path shares) skips the trace, and with it the rule and the tuning on
    stand-ins these tests check."""
    monkeypatch.delenv(inductor.KNOB, raising=False)
    monkeypatch.delenv(fusion.KNOB, raising=False)
    with torch.compiler.config.patch(force_disable_caches=True):
        yield


def _inputs(rows: int = 64) -> tuple[torch.Tensor, ...]:
    x = torch.randn(rows, 256, device="cuda", dtype=torch.float16)
    weight = torch.randn(256, device="cuda", dtype=torch.float16)
    b = (torch.randn(256, 256, device="cuda") / 16).half()
    return x, weight, b


def _check(result: torch.Tensor, inputs: tuple[torch.Tensor, ...]) -> None:
    torch.testing.assert_close(result.float(), reference(*inputs).float(), rtol=2e-2, atol=2e-2)


def _compiled(function: Any, **options: Any) -> Any:
    torch._dynamo.reset()
    counters.clear()
    return torch.compile(function, fullgraph=True, **options)


def _assert_emitted(code: str, names: list[str]) -> None:
    """Inductor's generated code launches each of ``names`` and no operator of ours."""
    assert "ninetoothed.launch" not in code and "auto_functionalized" not in code
    for name in names:
        assert f"def {name}(" in code, f"{name} is not among Inductor's kernels"


def test_the_block_is_launched_by_inductor_and_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fusion.KNOB, "off")  # every kernel ours
    inputs = _inputs()
    block(*inputs)  # eagerly first: tunes (the compiled trace reads the same table)
    result, codes = run_and_get_code(_compiled(block), *inputs)
    _check(result, inputs)
    _assert_emitted("\n".join(codes), ["rms_norm_kernel", "mm_kernel", "silu_kernel"])
    assert sum(counters["graph_break"].values()) == 0


def _launches(code: str) -> int:
    """Kernel launches in Inductor's generated code: Triton kernels' and cuBLAS's."""
    return code.count(".run(") + code.count("extern_kernels.")


def test_the_block_fuses_around_our_mm_as_torchs_does() -> None:
    """rms_norm, silu and add fused by Inductor, our mm launched by it: no more launches
    than torch's ops compiled."""
    inputs = _inputs()
    block(*inputs)
    result, codes = run_and_get_code(_compiled(block), *inputs)
    _check(result, inputs)
    code = "\n".join(codes)
    _assert_emitted(code, ["mm_kernel"])
    for name in ("rms_norm_kernel", "silu_kernel", "add_kernel"):
        assert f"def {name}(" not in code, name
    _, theirs = run_and_get_code(_compiled(torch_block), *inputs)
    assert _launches(code) <= _launches("\n".join(theirs)), (code, theirs)
    assert sum(counters["graph_break"].values()) == 0


def test_only_the_outputs_are_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inductor reads from the kernels' Triton IR which arguments they write: only the
    outputs, so no input is copied around a launch."""
    monkeypatch.setenv(fusion.KNOB, "off")
    inputs = _inputs()
    graphs: list[Any] = []
    trace(graphs, block, inputs, fullgraph=True)
    nodes = launches(graphs[0])
    assert len(nodes) == 4
    for node in nodes:
        assert node.kwargs["tensors_to_clone"] == ["output_pointer"], kernel_of(node).__name__


def test_a_first_call_inside_compile_tunes_once_on_stand_ins() -> None:
    configs = [{"BLOCK_SIZE": 256}, {"BLOCK_SIZE": 1024, "num_warps": 8}]
    kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3, configs=configs)

    def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        kernel(x, y, z)
        return z

    x, y = torch.randn(100_000, device="cuda"), torch.randn(100_000, device="cuda")
    tuner = kernel.generated.tuner
    assert not tuner.chosen
    torch.testing.assert_close(_compiled(function)(x, y), x + y)
    assert len(tuner.chosen) == 1  # tuned while tracing
    kernel(x, y, torch.empty_like(x))
    assert len(tuner.chosen) == 1  # the eager call read the same choice


def test_dynamic_shapes_compile_once_per_alignment() -> None:
    kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3)

    def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        kernel(x, y, z)
        return torch.relu(z)

    compiled = _compiled(function, dynamic=True)
    for size in (1000, 3000, 5000, 7000):  # multiples of 8, not of 16
        x, y = torch.randn(size, device="cuda"), torch.randn(size, device="cuda")
        torch.testing.assert_close(compiled(x, y), torch.relu(x + y))
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])


def test_the_library_block_recompiles_at_most_once_over_sizes() -> None:
    compiled = _compiled(block)
    for rows in (72, 88, 104, 120):  # multiples of 8, not of 16, above 64 (not thin)
        inputs = _inputs(rows)
        block(*inputs)
        _check(compiled(*inputs), inputs)
    # The first size compiles static, the second dynamic; the rest reuse it.
    assert counters["stats"]["unique_graphs"] <= 2, dict(counters["stats"])


def _library_block(a: torch.Tensor, b: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    attention = ops.scaled_dot_product_attention(q, q * 2, q * 3, is_causal=True)
    return ops.silu(ops.mm(a, b)).square().sum() + attention.sum()


def test_gradients_match_eager() -> None:
    a = torch.randn(128, 64, device="cuda", requires_grad=True)
    b = torch.randn(64, 96, device="cuda", requires_grad=True)
    q = torch.randn(1, 2, 128, 64, device="cuda", requires_grad=True)
    expected = _library_block(a, b, q)
    want = torch.autograd.grad(expected, (a, b, q))
    result, codes = run_and_get_code(_compiled(_library_block), a, b, q)
    got = torch.autograd.grad(result, (a, b, q))
    torch.testing.assert_close(result, expected, rtol=2e-3, atol=2e-3)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, rtol=2e-3, atol=2e-3)
    _assert_emitted("\n".join(codes), ["mm_kernel"])  # silu and its gradient fused
    assert sum(counters["graph_break"].values()) == 0


def test_reduce_overhead_records_our_kernels_in_cuda_graphs() -> None:
    operator = nt_torch.custom_op("nt_test_inductor_gpu::scaled_add", examples.scaled_add_kernel)

    def function(x: torch.Tensor, weight: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        z = torch.empty(x.numel(), dtype=x.dtype, device=x.device)  # the kernel is 1-D
        operator(block(x, weight, b).flatten(), x.flatten(), -1.0, z)
        return z.view_as(x)

    inputs = _inputs()
    function(*inputs)
    compiled = _compiled(function, mode="reduce-overhead")
    for _ in range(3):  # warm-up, record, replay
        torch.compiler.cudagraph_mark_step_begin()
        result = compiled(*inputs)
    expected = reference(*inputs).float() - inputs[0].float()
    torch.testing.assert_close(result.float(), expected, rtol=2e-2, atol=2e-2)
    for tensor in inputs:
        tensor.copy_(torch.randn_like(tensor.float()).to(tensor.dtype) / 4)
    torch.compiler.cudagraph_mark_step_begin()
    expected = reference(*inputs).float() - inputs[0].float()
    torch.testing.assert_close(compiled(*inputs).float(), expected, rtol=2e-2, atol=2e-2)
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])
    assert sum(counters["graph_break"].values()) == 0
