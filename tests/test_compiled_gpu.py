"""Our kernels in CUDA graphs: ``mode="reduce-overhead"``, ``torch.cuda.graph``, no host syncs.

Run on a GPU (``NT_TEST_GPU=1``, ``nox -s gpu``).  A kernel call captured
in a graph must launch on the capture stream and neither synchronise nor
compile while capturing: every capture below follows eager warm-up calls of
the same shapes (which tune and compile), and the replay must compute from
the inputs' new values.  Results are compared with float64 references.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from support.base import ON_GPU
from support.blocks import block, reference
from support.tutorial import differentiable as examples
from torch._dynamo.utils import counters

import nt_torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not (ON_GPU and torch.cuda.is_available()), reason="needs a CUDA GPU"),
]


def _inputs() -> tuple[torch.Tensor, ...]:
    x = torch.randn(64, 256, device="cuda", dtype=torch.float16)
    weight = torch.randn(256, device="cuda", dtype=torch.float16)
    b = (torch.randn(256, 256, device="cuda") / 16).half()
    return x, weight, b


def _check(result: torch.Tensor, inputs: tuple[torch.Tensor, ...]) -> None:
    torch.testing.assert_close(result.float(), reference(*inputs).float(), rtol=2e-2, atol=2e-2)


def _refill(inputs: tuple[torch.Tensor, ...]) -> None:
    """New values in the same tensors (what a graph replay reads)."""
    for tensor in inputs:
        tensor.copy_(torch.randn_like(tensor.float()).to(tensor.dtype) / 4)


@contextlib.contextmanager
def _no_sync() -> Iterator[None]:
    """Any synchronising CUDA call inside raises."""
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


def _warm(function: Any, inputs: tuple[torch.Tensor, ...]) -> None:
    """Eager warm-up on a side stream, as ``torch.cuda.graph`` asks (tunes and compiles)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            function(*inputs)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()


def test_reduce_overhead_mode_replays_our_ops() -> None:
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(block, fullgraph=True, mode="reduce-overhead")
    inputs = _inputs()
    for _ in range(3):  # warm-up, record, replay
        torch.compiler.cudagraph_mark_step_begin()
        result = compiled(*inputs)
    _check(result, inputs)
    _refill(inputs)
    torch.compiler.cudagraph_mark_step_begin()
    _check(compiled(*inputs), inputs)
    assert sum(counters["graph_break"].values()) == 0
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_torch_cuda_graph_captures_our_calls(compiled: bool) -> None:
    torch._dynamo.reset()
    function = torch.compile(block, fullgraph=True) if compiled else block
    inputs = _inputs()
    _warm(function, inputs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = function(*inputs)
    _refill(inputs)
    graph.replay()
    torch.cuda.synchronize()
    _check(result, inputs)


def test_a_registered_operator_and_a_user_kernel_in_cuda_graphs() -> None:
    operator = nt_torch.custom_op("nt_test_graphs::scaled_add", examples.scaled_add_kernel)

    def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z, w = torch.empty_like(x), torch.empty_like(x)
        operator(x, y, 2.0, z)
        examples.scaled_add_kernel(z, y, -1.0, w)
        return w

    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    _warm(function, (x, y))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = function(x, y)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(result, (x.double() + y.double()).float())
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(function, fullgraph=True, mode="reduce-overhead")
    for _ in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        result = compiled(x, y)
    torch.testing.assert_close(result, (x.double() + y.double()).float())
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])


def test_warm_calls_never_synchronise() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True)
    inputs = _inputs()
    for function in (block, compiled):
        _warm(function, inputs)
        with _no_sync():
            for _ in range(3):
                result = function(*inputs)
        _check(result, inputs)
