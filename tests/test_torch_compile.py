"""Kernels inside ``torch.compile`` (fullgraph, zero graph breaks) and ``torch.func.vmap``.

Under the interpreter (CPU tensors) and on the GPU (``NT_TEST_GPU=1``, where
``mode="reduce-overhead"`` adds CUDA graphs).  Tiles are pinned small so that
grids have several programs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.tutorial import differentiable as examples
from support.tutorial import softmax
from torch._dynamo.utils import counters

import ninetoothed
import nt_torch
from ninetoothed.errors import LaunchError

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"
ROOT = Path(__file__).resolve().parent.parent


def _block(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A small block: our kernels between torch operations."""
    z = torch.full_like(x, float("nan"))  # poisoned: the kernel must write all of it
    examples.scaled_add_kernel(x, y, 0.5, z)
    return torch.relu(z) * 2


def _compiled(function, **options):
    torch._dynamo.reset()
    counters.clear()
    return torch.compile(function, fullgraph=True, **options)


def test_fullgraph_equals_eager_with_zero_graph_breaks() -> None:
    x, y = torch.randn(200, device=DEVICE), torch.randn(200, device=DEVICE)  # 7 programs
    expected = torch.relu(x + 0.5 * y) * 2
    result = _compiled(_block)(x, y)
    torch.testing.assert_close(result, expected)
    torch.testing.assert_close(_block(x, y), expected)
    assert sum(counters["graph_break"].values()) == 0
    explanation = torch._dynamo.explain(_block)(x, y)
    assert explanation.graph_break_count == 0
    assert explanation.graph_count == 1


def test_compile_without_fullgraph_has_no_uint64_key_error() -> None:
    # It used to fail with KeyError(torch.uint64) tracing the interpreter's views.
    x, y = torch.randn(70, device=DEVICE), torch.randn(70, device=DEVICE)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(_block)(x, y), torch.relu(x + 0.5 * y) * 2)


@pytest.mark.interpreter_only  # the subprocess uses CPU tensors
def test_first_call_of_the_process_inside_compile() -> None:
    """The very first kernel call traced by Dynamo finds the adapter (a fresh process)."""
    script = (
        "import torch\n"
        "from support.tutorial import differentiable as d\n"
        "def f(x, y):\n"
        "    z = torch.empty_like(x)\n"
        "    d.scaled_add_kernel(x, y, 2.0, z)\n"
        "    return z\n"
        "x, y = torch.randn(50), torch.randn(50)\n"
        "out = torch.compile(f, fullgraph=True)(x, y)\n"
        "assert torch.allclose(out, x + 2 * y), (out, x + 2 * y)\n"
        "print('ok')\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")]
        ),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


@pytest.mark.skipif(not ON_GPU, reason="CUDA graphs need a GPU")
def test_reduce_overhead_mode_on_gpu() -> None:
    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    compiled = _compiled(_block, mode="reduce-overhead")
    for _ in range(3):  # warm-up runs, then replays of the recorded graph
        result = compiled(x, y)
    torch.testing.assert_close(result, torch.relu(x + 0.5 * y) * 2)
    assert sum(counters["graph_break"].values()) == 0


def test_custom_op_registration() -> None:
    operator = nt_torch.custom_op("nt_test_compile::scaled_add", examples.scaled_add_kernel)
    assert operator.mutates_args == ("z",)
    schema = str(operator.op._schema)
    assert "Tensor(a0!) z" in schema and "Scalar alpha" in schema, schema
    x, y = torch.randn(90, device=DEVICE), torch.randn(90, device=DEVICE)

    def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        operator(x, y, 3.0, z)
        return z

    torch.testing.assert_close(function(x, y), x + 3 * y)
    compiled = _compiled(function)
    torch.testing.assert_close(compiled(x, y), x + 3 * y)
    assert sum(counters["graph_break"].values()) == 0
    graph = torch._dynamo.explain(function)(x, y).graphs[0]
    assert "nt_test_compile.scaled_add" in graph.code
    with pytest.raises(ValueError, match="namespace::op_name"):
        nt_torch.custom_op("no_namespace", examples.scaled_add_kernel)
    with pytest.raises(TypeError, match="ninetoothed kernel"):
        nt_torch.custom_op("nt_test_compile::other", lambda: None)


def test_requires_grad_without_backward_is_refused() -> None:
    x = torch.randn(40, device=DEVICE, requires_grad=True)
    y, z = torch.randn(40, device=DEVICE), torch.empty(40, device=DEVICE)
    with pytest.raises(LaunchError, match=r"argument 0 requires grad.*no backward"):
        examples.scaled_add_kernel(x, y, 1.0, z)
    with torch.no_grad():
        examples.scaled_add_kernel(x, y, 1.0, z)
    torch.testing.assert_close(z, x.detach() + y)


def _loop(function, *batched):
    return torch.stack([function(*items) for items in zip(*batched)])


def test_vmap_matches_a_python_loop() -> None:
    xs, ys = torch.randn(5, 70, device=DEVICE), torch.randn(5, 70, device=DEVICE)
    torch.testing.assert_close(torch.func.vmap(_block)(xs, ys), _loop(_block, xs, ys))
    # Batch dimension elsewhere, one argument unbatched.
    result = torch.func.vmap(_block, in_dims=(1, None))(xs.T.contiguous(), ys[0])
    torch.testing.assert_close(result, _loop(lambda x: _block(x, ys[0]), xs))


def test_vmap_under_compile_matches_a_python_loop() -> None:
    """The batching rule launches through the operator again (on the unbatched tensors),
    which under torch.compile records a node instead of reading fake tensors' data."""
    xs, ys = torch.randn(5, 70, device=DEVICE), torch.randn(5, 70, device=DEVICE)
    result = _compiled(torch.func.vmap(_block))(xs, ys)
    torch.testing.assert_close(result, _loop(_block, xs, ys))
    assert sum(counters["graph_break"].values()) == 0


def test_vmap_of_an_unbatched_output_is_refused() -> None:
    z = torch.empty(30)

    def writes_outside(x: torch.Tensor) -> torch.Tensor:
        examples.scaled_add_kernel(x, x, 1.0, z)
        return x

    with pytest.raises(LaunchError, match="output 'z' is not batched"):
        torch.func.vmap(writes_outside)(torch.randn(3, 30))


def test_vmap_folds_the_batch_into_one_launch_when_declared(monkeypatch) -> None:
    kernel = ninetoothed.make(softmax.arrangement, softmax.application, _softmax_tensors())
    ninetoothed.batching(kernel, "fold-leading")
    launches = []
    adapter_type = type(_torch_adapter())
    original = adapter_type.launch_eagerly
    monkeypatch.setattr(
        adapter_type,
        "launch_eagerly",
        lambda self, k, a, kw: (launches.append(a[0].shape), original(self, k, a, kw)),
    )

    def row_softmax(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        kernel(x, out, BLOCK_SIZE=32)
        return out

    xs = torch.randn(4, 6, 20, device=DEVICE)
    torch.testing.assert_close(torch.func.vmap(row_softmax)(xs), torch.softmax(xs, -1))
    assert launches == [torch.Size([24, 20])]  # one launch, batch folded into the rows


def _softmax_tensors():
    from ninetoothed import Tensor

    return (Tensor(2, other=float("-inf")), Tensor(2))


def _torch_adapter():
    from ninetoothed.runtime import plugins

    return plugins.adapter_for(torch.empty(0))


def _library_block(a: torch.Tensor, b: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Library ops with backwards, between torch operations."""
    from nt_torch import ops

    attention = ops.scaled_dot_product_attention(q, q * 2, q * 3, is_causal=True)
    return ops.silu(ops.mm(a, b)).square().sum() + attention.sum()


@pytest.mark.parametrize("grad", [False, True])
def test_library_ops_fullgraph_with_and_without_gradients(grad: bool) -> None:
    """The library's ops compile with zero graph breaks; with inputs requiring grad
    they run as autograd Functions around our custom operators, and the compiled
    gradients equal eager ones."""
    from ninetoothed.library import pinned_block_sizes

    a, b = torch.randn(40, 18, device=DEVICE), torch.randn(18, 36, device=DEVICE)
    q = torch.randn(1, 2, 40, 16, device=DEVICE)
    for tensor in (a, b, q):
        tensor.requires_grad_(grad)
    with pinned_block_sizes(16):
        # Eagerly first: Dynamo cannot trace the making of a library kernel, which
        # happens on an op's first call (forward and backward kernels alike).
        expected = _library_block(a, b, q)
        want = torch.autograd.grad(expected, (a, b, q)) if grad else ()
        result = _compiled(_library_block)(a, b, q)
        torch.testing.assert_close(result, expected)
        got = torch.autograd.grad(result, (a, b, q)) if grad else ()
        for x, y in zip(got, want, strict=True):
            # On the GPU, eager and compiled backwards may sum in another order, and
            # float32 products are TF32 (about 1e-3 relative; an H100 run differed by
            # 7.3e-4 in one element of the attention's query gradient).
            tolerance = {"rtol": 2e-3, "atol": 2e-3} if ON_GPU else {}
            torch.testing.assert_close(x, y, **tolerance)
    assert sum(counters["graph_break"].values()) == 0
