"""Compiled calls handed to Inductor as user Triton kernels, and where they are not.

On the GPU, AOTAutograd replaces each of our operator nodes with the kernel
itself (``nt_torch.inductor``).  These tests check that on the CPU: Triton's
JIT mode (no interpreter) and CPU tensors accepted as if they were on the GPU,
with a backend that keeps the traced graph and never runs it (Inductor cannot
launch Triton kernels on CPU tensors).  Launching, tuning and timing are the
GPU tests' part (``tests/test_compiled_inductor_gpu.py``).
"""

from __future__ import annotations

import dis
from typing import Any

import pytest
import torch
from support.blocks import block
from support.traced_graphs import Traced, kernel_of, launches, trace
from support.tutorial import add
from support.tutorial import differentiable as examples
from torch._dynamo.utils import counters

import ninetoothed
import nt_torch
from ninetoothed import Tensor
from ninetoothed.library import pinned_block_sizes
from nt_torch import fusion, inductor
from nt_triton.emitted import emitted_function

pytestmark = pytest.mark.interpreter_only  # CPU tensors posing as GPU ones

BLOCK = ninetoothed.block_size()


def _add_kernel() -> Any:
    return ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3)


def _added(kernel: Any) -> Any:
    def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        kernel(x, y, z, BLOCK_SIZE=16)
        return z * 2

    return function


def test_a_kernel_call_becomes_a_user_triton_kernel(as_on_gpu: list[Any]) -> None:
    kernel = _add_kernel()
    x, y = torch.randn(100), torch.randn(100)
    trace(as_on_gpu, _added(kernel), (x, y), fullgraph=True)
    (graph,) = as_on_gpu
    assert "auto_functionalized" not in graph.code and "ninetoothed.launch" not in graph.code
    (node,) = launches(graph)
    assert kernel_of(node) is emitted_function(kernel.generated)  # without its docstrings
    assert node.kwargs["grid"] == [(7, 1, 1)]  # 100 elements in blocks of 16
    assert node.kwargs["kwargs"]["z_pointer"].target is torch.ops.aten.empty_like.default
    assert sum(counters["graph_break"].values()) == 0


def test_the_library_block_launches_four_user_kernels_without_fusion(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fusion.KNOB, "off")  # with it, see test_compiled_fusion.py
    x, weight, b = torch.randn(40, 48), torch.randn(48), torch.randn(48, 48)
    with pinned_block_sizes(16):
        trace(as_on_gpu, block, (x, weight, b), fullgraph=True)
    (graph,) = as_on_gpu
    assert "auto_functionalized" not in graph.code
    names = [kernel_of(node).__name__ for node in launches(graph)]
    assert names == ["rms_norm_kernel", "mm_kernel", "silu_kernel", "add_kernel"], names
    grids = [node.kwargs["grid"] for node in launches(graph)]
    assert grids[1] == [(9, 1, 1)]  # 40 x 48 in 16 x 16 tiles


def test_a_registered_operator_becomes_a_user_triton_kernel(as_on_gpu: list[Any]) -> None:
    operator = nt_torch.custom_op("nt_test_inductor::scaled_add", examples.scaled_add_kernel)

    def function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        operator(x, y, 3.0, z)
        return z

    trace(as_on_gpu, function, (torch.randn(64), torch.randn(64)), fullgraph=True)
    (node,) = launches(as_on_gpu[0])
    assert node.kwargs["kwargs"]["alpha"] == 3.0
    assert "nt_test_inductor" not in as_on_gpu[0].code


def test_dynamic_shapes_trace_once_per_alignment_of_the_sizes(as_on_gpu: list[Any]) -> None:
    """Symbolic sizes reach the kernel and its grid; only the host's constexprs (here
    the size's power-of-two alignment, capped) specialise the graph."""
    kernel = _add_kernel()
    sizes = [100, 300, 500, 700]  # each a multiple of 4, of no higher power of two
    compiled = trace(
        as_on_gpu,
        _added(kernel),
        *((torch.randn(n), torch.randn(n)) for n in sizes),
        dynamic=True,
        fullgraph=True,
    )
    assert len(as_on_gpu) == 1 and counters["stats"]["unique_graphs"] == 1
    (node,) = launches(as_on_gpu[0])
    (grid,) = node.kwargs["grid"]
    assert not isinstance(grid[0], int)  # a function of the symbolic size
    with pytest.raises(Traced):
        compiled(torch.randn(96), torch.randn(96))  # aligned to 32: another graph
    assert len(as_on_gpu) == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_graph_that_runs_is_not_compiled_again_for_a_new_kernel(backend: str) -> None:
    """Dynamo replays a store it traced once the graph has run: a table of the kernel
    it read while tracing (the adapters it found, whether the fast path was tried)
    must not change then, or the next call fails its guard and compiles again.
    (:func:`trace`'s graphs never run, so its tests cannot see this.)"""
    kernel = _add_kernel()  # never called eagerly
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(_added(kernel), backend=backend, dynamic=True, fullgraph=True)
    for size in (100, 300, 500, 700):
        x, y = torch.randn(size), torch.randn(size)
        torch.testing.assert_close(compiled(x, y), (x + y) * 2)
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    torch._dynamo.reset()


def test_gradients_trace_user_kernels_forward_and_backward(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nt_torch import ops

    def function(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ops.silu(ops.mm(a, b)).sum()

    monkeypatch.setenv(fusion.KNOB, "off")  # silu's kernel too
    a = torch.randn(32, 16, requires_grad=True)
    b = torch.randn(16, 32, requires_grad=True)
    with pinned_block_sizes(16):
        # Eagerly first (under the interpreter): Dynamo cannot trace making the op's
        # autograd Function, which its first call with gradients does.
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        function(a, b).backward()
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        trace(as_on_gpu, function, (a, b), fullgraph=True)
    joint, forward = as_on_gpu
    for graph in (joint, forward):
        assert "auto_functionalized" not in graph.code
    for graph in (joint, forward):  # the ops' gradients are torch's operations here
        names = [kernel_of(node).__name__ for node in launches(graph)]
        assert names == ["mm_kernel", "silu_kernel"]


def test_vmap_under_compile_launches_user_kernels(as_on_gpu: list[Any]) -> None:
    kernel = _add_kernel()  # not declared foldable: one launch per batch element
    trace(as_on_gpu, torch.func.vmap(_added(kernel)), (torch.randn(3, 40), torch.randn(3, 40)))
    assert "auto_functionalized" not in as_on_gpu[0].code
    assert [node.kwargs["grid"] for node in launches(as_on_gpu[0])] == [[(3, 1, 1)]] * 3


def test_the_interpreter_keeps_the_generic_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inductor, "DEVICE_TYPES", ("cuda", "cpu"))
    monkeypatch.setenv(inductor.KNOB, "inductor")
    kernel = _add_kernel()
    x = torch.randn(50)
    assert (
        inductor.reason(kernel.generated, (x, x, x), {}) == "Triton's interpreter runs the kernel"
    )
    graphs: list[Any] = []
    trace(graphs, _added(kernel), (x, x), fullgraph=True)
    assert "auto_functionalized" in graphs[0].code and not launches(graphs[0])


def test_tensors_off_the_gpu_keep_the_generic_operator(as_on_gpu: list[Any]) -> None:
    kernel = _add_kernel()
    x = torch.randn(10)
    assert inductor.reason(kernel.generated, (x, x, x), {}) is None
    inductor.DEVICE_TYPES = ("cuda",)  # restored by the fixture's monkeypatch
    assert inductor.reason(kernel.generated, (x, x, x), {}) == "tensors on cpu"
    trace(as_on_gpu, _added(kernel), (x, x), fullgraph=True)
    assert "auto_functionalized" in as_on_gpu[0].code and not launches(as_on_gpu[0])


@pytest.mark.parametrize("value", ["operator", "anything"])
def test_the_knob_keeps_the_generic_operator(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """The hand-over is the default: any value of the knob but ``inductor`` turns it off."""
    monkeypatch.setenv(inductor.KNOB, value)
    kernel = _add_kernel()
    x = torch.randn(10)
    why = inductor.reason(kernel.generated, (x, x, x), {})
    assert why is not None and why.startswith(f"{inductor.KNOB}={value} ")
    trace(as_on_gpu, _added(kernel), (x, x), fullgraph=True)
    assert "auto_functionalized" in as_on_gpu[0].code and not launches(as_on_gpu[0])
    monkeypatch.setenv(inductor.KNOB, "Inductor")
    assert inductor.reason(kernel.generated, (x, x, x), {}) is None
    monkeypatch.delenv(inductor.KNOB)
    assert inductor.reason(kernel.generated, (x, x, x), {}) is None


def test_data_dependent_sizes_keep_the_generic_operator(as_on_gpu: list[Any]) -> None:
    """A size known only when the graph runs (an unbacked symbol) has no value to tune
    or check the constexprs with: the generic operator launches it at run time."""
    kernel = _add_kernel()

    def function(x: torch.Tensor) -> torch.Tensor:
        positive = x[x > 0]
        out = torch.empty_like(positive)
        kernel(positive, positive, out, BLOCK_SIZE=16)
        return out

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        trace(as_on_gpu, function, (torch.randn(64),), fullgraph=True)
    assert "auto_functionalized" in as_on_gpu[0].code and not launches(as_on_gpu[0])


def test_an_unexpected_failure_keeps_the_generic_operator_with_a_warning(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nt_triton import emitted

    def failing(*args: Any) -> Any:
        raise RuntimeError("no launch today")

    monkeypatch.setattr(emitted, "emitted_launch", failing)
    with pytest.warns(UserWarning, match="no launch today.*keeps the generic operator"):
        trace(as_on_gpu, _added(_add_kernel()), (torch.randn(30), torch.randn(30)))
    assert "auto_functionalized" in as_on_gpu[0].code and not launches(as_on_gpu[0])


def test_a_source_inductor_cannot_embed_keeps_the_generic_operator(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor pastes the source between ``'''`` quotes unescaped: one that would read
    back otherwise is refused before the hand-over, with the reason."""
    from nt_triton import emitted

    kernel = _add_kernel()
    generated = kernel.generated
    monkeypatch.setattr(generated, "source", generated.source + "NOTE = 'a\\tb'\n")
    monkeypatch.setattr(emitted, "_EMITTED", {})
    with pytest.warns(UserWarning, match="NotEmbeddable.*line.*keeps the generic operator"):
        trace(as_on_gpu, _added(kernel), (torch.randn(30), torch.randn(30)))
    assert "auto_functionalized" in as_on_gpu[0].code and not launches(as_on_gpu[0])


def test_a_call_the_checks_refuse_fails_the_compile(as_on_gpu: list[Any]) -> None:
    kernel = _add_kernel()

    def mismatched(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty(len(x) * 2)
        kernel(x, y, z, BLOCK_SIZE=16)
        return z

    with pytest.raises(Exception, match="(?s)LaunchError.*'z'.*must have the same size"):
        trace(as_on_gpu, mismatched, (torch.randn(64), torch.randn(64)), fullgraph=True)


def test_jagged_kernels_keep_the_generic_operator(as_on_gpu: list[Any]) -> None:
    kernel = ninetoothed.make(
        lambda x, y, block=BLOCK: (x.tile((1, block)), y.tile((1, block))),
        _copy,
        (Tensor(2, jagged_dim=1), Tensor(2)),
    )
    assert kernel.generated.spec.jagged_parameters
    x = torch.randn(3, 4)
    assert inductor.reason(kernel.generated, (x, x), {}) == "the kernel has jagged parameters"
    assert inductor.reason(_add_kernel().generated, (x, x, x), {}) is None


def _copy(x: Any, y: Any) -> None:
    y = x  # noqa: F841


def test_a_call_without_a_configuration_is_tuned_once_then_read(as_on_gpu: list[Any]) -> None:
    """No configuration for the key: ``tune()`` (an eager call on stand-ins) runs once,
    and the configuration it recorded is the one emitted."""
    from nt_triton.emitted import emitted_launch

    configs = [{"BLOCK_SIZE": 16}, {"BLOCK_SIZE": 32, "num_warps": 2, "num_stages": 1}]
    kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3, configs=configs)
    kernel = kernel.generated
    x = torch.randn(100)
    adapter = nt_torch.adapter.TorchAdapter()
    bound = adapter.bind(kernel, (x, x, torch.empty(100)), {})
    tuned: list[Any] = []
    chosen = kernel.configurations[1]

    def tune() -> None:
        tuned.append(True)
        key = next(iter(kernel.tuner.chosen), None)
        assert key is None  # nothing remembered before
        from nt_triton._launch.tuning_calls import run_time_scalars, tuning_key

        kernel.tuner.chosen[("GPU", tuning_key(bound, run_time_scalars(kernel)))] = chosen

    launch = emitted_launch(kernel, bound, bound, "GPU", tune)
    assert launch is not None and tuned == [True]
    assert launch.meta == {"BLOCK_SIZE": 32} and (launch.num_warps, launch.num_stages) == (2, 1)
    assert launch.grid == (4,)
    assert emitted_launch(kernel, bound, bound, "GPU", tune) is not None and tuned == [True]


def test_stand_ins_have_the_traced_layout() -> None:
    base = torch.randn(6, 1)
    for tensor in (torch.randn(4, 6).T, base.expand(6, 5), torch.randint(0, 9, (3, 2))):
        stand_in = inductor._stand_in(tensor)
        assert (stand_in.shape, stand_in.stride(), stand_in.dtype) == (
            tensor.shape,
            tensor.stride(),
            tensor.dtype,
        )
        assert stand_in.data_ptr() != tensor.data_ptr()
    assert not inductor._stand_in(torch.randint(0, 9, (3, 2))).any()  # indices stay in range


def test_inductor_can_rebuild_every_library_kernel(as_on_gpu: list[Any]) -> None:
    """Inductor copies a user kernel's source and the names it refers to into its own
    module: every global the copy calls must be defined there."""
    from torch._inductor.codegen.wrapper import (
        user_defined_triton_kernel_transitive_closure_source_code as closure,
    )

    from ninetoothed.library.ops import kernels

    x, weight, b = torch.randn(40, 48), torch.randn(48), torch.randn(48, 48)
    with pinned_block_sizes(16):
        trace(as_on_gpu, block, (x, weight, b), fullgraph=True)
    made = kernels.made()
    assert len(made) >= 4
    for kernel in made:
        _assert_rebuilt(closure(emitted_function(kernel.generated)))


def _assert_rebuilt(source: str) -> None:
    """Every global name the functions of ``source`` load exists once it runs after
    Inductor's imports for Triton kernels."""
    import linecache

    from torch._inductor.codegen.triton import TritonKernel

    header = TritonKernel.gen_common_triton_imports()
    text = f"{header}\n{source}"
    filename = f"<rebuilt {hash(text)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102
    for name, value in list(namespace.items()):
        function = getattr(value, "fn", None)
        if function is None or not hasattr(function, "__code__"):
            continue
        for instruction in dis.Bytecode(function):
            if instruction.opname == "LOAD_GLOBAL":
                assert instruction.argval in namespace or instruction.argval in dir(__builtins__), (
                    f"{name} loads {instruction.argval!r}, which Inductor's copy lacks"
                )


def test_a_language_core_alias_is_rewritten_for_inductor(
    as_on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where Triton's language lacks ``to_tensor`` (3.6), generated modules reach it
    through an alias of ``triton.language.core``, which Inductor's copy would leave
    undefined: the emitted function's module names ``tl.core`` instead."""
    from torch._inductor.codegen.wrapper import (
        user_defined_triton_kernel_transitive_closure_source_code as closure,
    )

    from nt_triton import emitted

    kernel = examples.scaled_add_kernel.generated  # its application adds: ninetoothed_add
    alias = "ninetoothed_language_core"
    assert "tl.to_tensor(" in kernel.source
    aliased = kernel.source.replace("tl.to_tensor(", f"{alias}.to_tensor(").replace(
        "import triton.language as tl\n",
        f"import triton.language as tl\nfrom triton.language import core as {alias}\n",
    )
    monkeypatch.setattr(kernel, "source", aliased)
    monkeypatch.setattr(emitted, "_EMITTED", {})
    function = emitted.emitted_function(kernel)
    assert function is not kernel.function
    rebuilt = closure(function)
    assert alias not in rebuilt and "tl.core.to_tensor(" in rebuilt
    _assert_rebuilt(rebuilt)
