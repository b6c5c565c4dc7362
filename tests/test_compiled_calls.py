"""The library's ops and user kernels inside ``torch.compile``, and what a compiled call costs.

A compiled function calls each kernel through a custom operator
(``ninetoothed::launch``, or one registered with ``nt_torch.custom_op``); its
implementation must launch from the same cached plans as an eager call, not
validate and describe the call again every time.  The cost tests run with
:func:`support.stub_gpu.stubbed_gpu` (the GPU's fast path on CPU tensors,
launches recorded instead of run); the results tests run under the
interpreter (or, with ``NT_TEST_GPU=1``, on the GPU).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from support.base import poison_outputs
from support.blocks import block, reference
from support.stub_gpu import stubbed_gpu
from support.tutorial import add
from support.tutorial import differentiable as examples
from torch._dynamo.utils import counters

import ninetoothed
import nt_torch
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError
from ninetoothed.library import pinned_block_sizes
from nt_torch import ops

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ops' outputs start as NaN; on the CPU, blocks of 16 (several programs)."""
    framework = ops.framework
    poison_outputs(
        monkeypatch,
        framework,
        lambda like, shape, dtype=None: torch.full(
            tuple(shape), float("nan"), dtype=like.dtype, device=like.device
        ),
    )
    if ON_GPU:
        yield
        return
    with pinned_block_sizes(16):
        yield


def _compiled(function: Any) -> Any:
    torch._dynamo.reset()
    counters.clear()
    return torch.compile(function, fullgraph=True)


def _assert_one_graph(function: Any, *args: Any) -> None:
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    explanation = torch._dynamo.explain(function)(*args)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)


def _inputs(rows: int = 40, columns: int = 48) -> tuple[torch.Tensor, ...]:
    x = torch.randn(rows, columns, device=DEVICE)
    weight = torch.randn(columns, device=DEVICE)
    b = torch.randn(columns, columns, device=DEVICE) / columns**0.5
    return x, weight, b


TOLERANCE = 5e-3 if ON_GPU else 1e-4
"""Float32 products use TF32 on the GPU."""


def test_library_ops_compile_into_one_graph_and_match_eager(poisoned: None) -> None:
    inputs = _inputs()  # 40 x 48 in blocks of 16: 3 x 3 programs for the matmul
    expected = reference(*inputs).float()
    compiled = _compiled(block)
    result, eager = compiled(*inputs), block(*inputs)
    torch.testing.assert_close(result, expected, rtol=TOLERANCE, atol=TOLERANCE)
    # On the GPU, compiled rms_norm and silu are Inductor's fused PyTorch ops.
    close = TOLERANCE if ON_GPU else 1e-5
    torch.testing.assert_close(result, eager, rtol=close, atol=close)
    _assert_one_graph(block, *inputs)


def test_ops_on_fake_tensors_describe_their_outputs_and_launch_nothing() -> None:
    """Dynamo learns the outputs of an op it keeps as one call by running it on fake
    tensors, and PyTorch 2.11 does so with ``is_compiling`` false: the op must
    then take the custom operator's fake path, not read the fakes' pointers (on
    the GPU, every compiled block with an op failed so)."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    x, weight, b = _inputs()
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fx, fweight, fb = (mode.from_tensor(t) for t in (x, weight, b))
        calls = {
            "rms_norm": (lambda: ops.rms_norm(fx, fweight), (40, 48)),
            "mm": (lambda: ops.mm(fx, fb), (40, 48)),
            "add": (lambda: ops.add(fx, fx), (40, 48)),
        }
        for name, (call, shape) in calls.items():
            out = call()
            assert isinstance(out, FakeTensor), name
            assert tuple(out.shape) == shape, name
        flat = fx.flatten()
        add.kernel(flat, flat, torch.empty_like(flat))  # a user kernel: no pointer read


def test_make_fx_with_real_tensors_records_the_ops_operator() -> None:
    """``make_fx(tracing_mode="real")`` runs the function on real tensors under its
    proxy mode: an eager launch would compute but leave the op out of the graph
    (before, the launch failed on the proxies' storage).  The graph must hold the
    operator and compute the op on new inputs."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def function(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        flat = torch.empty_like(a.flatten())
        add.kernel(ops.add(a, b).flatten(), b.flatten(), flat)  # an op, then a user kernel
        return flat

    x, y = (torch.randn(40, 48, device=DEVICE) for _ in range(2))
    graph = make_fx(function, tracing_mode="real")(x, y)
    targets = [str(node.target) for node in graph.graph.nodes if node.op == "call_function"]
    assert sum("ninetoothed" in target for target in targets) == 2, targets
    a, b = torch.randn(40, 48, device=DEVICE), torch.randn(40, 48, device=DEVICE)
    torch.testing.assert_close(graph(a, b), (a + 2 * b).flatten())


def test_a_dispatch_mode_sees_the_ops_operator() -> None:
    """A user's ``TorchDispatchMode`` (a FLOP counter, a logger) sees each call as the
    op's operator, which runs under it as eagerly."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Logged(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x, y = (torch.randn(40, 48, device=DEVICE) for _ in range(2))
    with Logged():
        result = ops.add(x, y)
    assert any("ninetoothed" in name for name in seen), seen
    torch.testing.assert_close(result, x + y)


def test_ops_compile_after_other_frameworks_dtypes_were_named(poisoned: None) -> None:
    """The core memoises dtype names for every framework; NumPy's dtypes there made
    Dynamo (torch 2.11) refuse the ops' describe ("cannot determine whether the
    underlying object is hashable"): torch's adapter names torch dtypes itself."""
    from ninetoothed.arrangement.dtype import name_of

    name_of(np.dtype("float16"))  # what JAX's and the evaluator's descriptions add
    inputs = _inputs()
    compiled = _compiled(block)
    torch.testing.assert_close(
        compiled(*inputs), reference(*inputs).float(), rtol=TOLERANCE, atol=TOLERANCE
    )
    _assert_one_graph(block, *inputs)


def mixed(x: torch.Tensor, y: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> Any:
    """More ops, a user kernel with a scalar, and torch ops between them."""
    z = torch.full_like(x, float("nan"))
    examples.scaled_add_kernel(x.flatten(), y.flatten(), 0.5, z.flatten())
    normalised, total = ops.fused_add_rms_norm(z, residual, weight)
    return ops.softmax(normalised * 2, dim=-1), total


def test_ops_and_a_user_kernel_compile_into_one_graph(poisoned: None) -> None:
    x, y, residual = (torch.randn(33, 20, device=DEVICE) for _ in range(3))
    weight = torch.randn(20, device=DEVICE)
    total = (x.double() + 0.5 * y.double()) + residual.double()
    rms = torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + 1e-6)
    expected = torch.softmax(total * rms * weight.double() * 2, -1)
    compiled = _compiled(mixed)
    for function in (compiled, mixed):
        probabilities, summed = function(x, y, residual, weight)
        torch.testing.assert_close(summed, total.float(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(probabilities, expected.float(), rtol=1e-4, atol=1e-5)
    _assert_one_graph(mixed, x, y, residual, weight)


class _Unrelated:
    """A plugin with no hooks: registering and unregistering it changes the registry."""


def _doubled(x: Any, y: Any) -> None:
    y = x * 2  # noqa: F841


def test_a_first_call_traced_after_the_registry_changed(poisoned: None) -> None:
    """Registering a plugin forgets which adapter takes which type; the created
    adapters' types must come back, or a kernel's first call traced by Dynamo asks
    the pluggy hook, which it cannot trace (seen on the GPU: a fullgraph error)."""
    ninetoothed.runtime.plugins.register(_Unrelated(), name="unrelated")
    ninetoothed.runtime.plugins.unregister("unrelated")
    # torch 2.13's Dynamo traces pluggy, torch 2.11's does not: check the lookup too.
    remembered = ninetoothed.runtime.plugins._adapter_by_type.get(torch.Tensor)
    assert remembered is not None and remembered.name == "torch"
    kernel = ninetoothed.make(
        lambda x, y: (x.tile((16,)), y.tile((16,))), _doubled, (Tensor(1), Tensor(1))
    )
    x = torch.randn(40, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    compiled = _compiled(lambda x, y: kernel(x, y))
    compiled(x, y)
    torch.testing.assert_close(y, x * 2)


@pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors
def test_compiled_calls_launch_from_cached_plans(counted: dict[str, int]) -> None:
    x, weight, b = (t.half() for t in _inputs(64, 256))
    with stubbed_gpu() as launches:
        compiled = torch.compile(block, fullgraph=True)
        compiled(x, weight, b)  # traces, then each launch misses once and makes its plan
        assert counted["plan"] == 4
        for _ in range(3):
            counted.update(bind=0, plan=0)
            launches.clear()
            result = compiled(x, weight, b)
            assert counted == {"bind": 0, "plan": 0}  # no validation, no describe: plans hit
            assert [name for name, _ in launches] == ["rms_norm", "mm", "silu", "add"]
            # The last launch writes the result: its pointer comes per call.
            assert result.data_ptr() in launches[-1][1]
        inputs = launches[0][1]
        assert x.data_ptr() in inputs and weight.data_ptr() in inputs


@pytest.mark.interpreter_only
def test_a_registered_operator_launches_from_cached_plans(counted: dict[str, int]) -> None:
    with stubbed_gpu() as launches:
        kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3)
        operator = nt_torch.custom_op("nt_test_compiled::add", kernel)

        def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            z = torch.empty_like(x)
            operator(x, y, z)
            return z

        x, y = torch.randn(300), torch.randn(300)
        compiled = torch.compile(function, fullgraph=True)
        compiled(x, y)
        counted.update(bind=0, plan=0)
        launches.clear()
        result = compiled(x, y)
        assert counted == {"bind": 0, "plan": 0}
        assert len(launches) == 1
        assert launches[0][1][:3] == (x.data_ptr(), y.data_ptr(), result.data_ptr())


@pytest.mark.interpreter_only
def test_the_operator_diagnoses_a_call_its_plans_do_not_fit(counted: dict[str, int]) -> None:
    with stubbed_gpu() as launches:
        kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3)
        x, y, z = torch.randn(50), torch.randn(50), torch.empty(50)
        kernel(x, y, z)  # an eager call makes the plan
        launch = torch.ops.ninetoothed.launch
        launch(kernel.source_path, [x, y], [z], [], [], [])
        assert (len(launches), counted["plan"], counted["bind"]) == (2, 1, 1)
        with pytest.raises(LaunchError, match="y"):
            launch(kernel.source_path, [x, torch.randn(2, 25)], [z], [], [], [])
        with pytest.raises(LaunchError, match="takes 3 arguments"):
            launch(kernel.source_path, [x], [z], [], [], [])
        assert len(launches) == 2


@pytest.mark.interpreter_only
def test_grad_mode_refuses_tensors_a_no_grad_call_made_a_plan_for() -> None:
    with stubbed_gpu() as launches:
        kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3)
        x, y, z = torch.randn(64, requires_grad=True), torch.randn(64), torch.empty(64)
        with torch.no_grad():
            kernel(x, y, z)
            kernel(x, y, z)  # from the plan
        assert len(launches) == 2
        with pytest.raises(LaunchError, match="requires grad"):
            kernel(x, y, z)


def test_new_sizes_recompile_once_not_per_call(poisoned: None) -> None:
    """The first size compiles a static graph, the second a dynamic one that serves
    the rest: the ops' Python decides on symbolic sizes without specialising on them
    (thin outputs aside: at most 64 rows pick their tile height by value)."""
    compiled = _compiled(block)
    for rows in (72, 88, 104):
        inputs = _inputs(rows)
        block(*inputs)  # the kernels exist before the trace (see test_torch_compile.py)
        result = compiled(*inputs)
        torch.testing.assert_close(
            result, reference(*inputs).float(), rtol=TOLERANCE, atol=TOLERANCE
        )
    assert counters["stats"]["unique_graphs"] == 2, dict(counters["stats"])


def _launch_error_in(error: BaseException | None) -> LaunchError | None:
    """``error`` or the first :class:`LaunchError` in what it was raised from or while."""
    while error is not None and not isinstance(error, LaunchError):
        error = error.__cause__ or error.__context__
    return error


def test_a_bad_call_of_an_op_fails_the_compile_with_its_message() -> None:
    """Dynamo drops the error of a function it does not trace (the ops are
    ``allow_in_graph``-ed) but keeps it in the chain it raises: PyTorch 2.13 raises
    a ``UserError`` with the op's message, from it; other releases may wrap it
    further (2.11 did when the ops were ``nonstrict_trace``-d: Unsupported <-
    UserError <- RuntimeError <- the op's LaunchError), which a traceback prints.
    Compiling the op itself: Dynamo wraps a callable without source in a frame
    of its own, so the op is one call there too (``nt_torch.ops._GraphCall``)."""
    x, sin = torch.randn(2, 3, 5, 16, device=DEVICE), torch.randn(5, 8, device=DEVICE)
    compiled = torch.compile(ops.rotary_position_embedding, backend="aot_eager", fullgraph=True)
    with pytest.raises(Exception) as raised:  # noqa: B017 - Dynamo's type varies by release
        compiled(x, sin, sin)
    message = r"sin, cos of shape \(3, 8\); got \(5, 8\)"
    error = _launch_error_in(raised.value)
    assert error is not None, repr(raised.value)
    assert re.search(message, str(error)), error
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 13):
        assert re.search(message, str(raised.value)), raised.value  # the error raised
    with pytest.raises(LaunchError) as eager:
        ops.rotary_position_embedding(x, sin, sin)
    assert type(eager.value) is LaunchError  # eagerly, the op's own error
    torch._dynamo.reset()
