"""A recorded plan launches what the op's full path launches, on the GPU's fast path.

Under :func:`support.stub_gpu.stubbed_gpu` the ops run on CPU tensors as on a
GPU, each launch recorded (kernel name, pointers and scalars) instead of run.
A plan calls the kernels' launches directly, past the checks the full path
makes: these tests compare its launches with the full path's, pointer by
pointer (each pointer named after the argument or the output it belongs to),
for new tensors, strides, aliasing and misaligned views; and they check that
what the plan leaves to the kernel (its tuned configuration, tensors
requiring grad) still takes the right path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from support.stub_gpu import Launches, stubbed_gpu

import ninetoothed
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import LaunchError
from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import _memo, decoding
from ninetoothed.runtime import plugins
from nt_torch import ops
from nt_triton._launch import lean
from nt_triton._launch.launcher import FastLauncher

pytestmark = pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors


@pytest.fixture(params=["C", "Python"])
def launches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Launches]:
    """Launches recorded, blocks of 16 (several programs), plans forgotten before; the
    kernels' pinned launches in C (``lean_pinned.c``) or in generated Python."""
    if request.param == "Python":
        monkeypatch.setattr(lean.built, "values", [None])  # no extension: the Python launch
    elif lean.built() is None:
        pytest.skip("no C compiler: the C pinned launch cannot be built")
    with stubbed_gpu() as recorded, pinned_block_sizes(16):
        yield recorded


def _pinned(launch: Any) -> list[Any]:
    """A pinned launch's ``[plan, generation at the pin]``, in C or in Python."""
    native = getattr(launch, "pinned", None)
    return native if native is not None else launch.__globals__["pinned"]


def _named(found: Launches, tensors: list[torch.Tensor], result: Any) -> list[Any]:
    """The launches with each pointer named: ``in<i>`` (the i-th input, offset in
    bytes), ``out`` (the result's), ``tmp<n>`` (the n-th other buffer met)."""
    names: dict[int, str] = {}
    for index, tensor in enumerate(tensors):
        names.setdefault(tensor.data_ptr(), f"in{index}")
    outputs = result if isinstance(result, tuple) else (result,)
    for output in outputs:
        names.setdefault(output.data_ptr(), "out")
    named = []
    for kernel, values in found:
        row = []
        for value in values:
            if isinstance(value, int) and value > 1 << 20 and value not in names:
                names[value] = f"tmp{sum(n.startswith('tmp') for n in names.values())}"
            row.append(names.get(value, value) if isinstance(value, int) else value)
        named.append((kernel, tuple(row)))
    return named


def _calls(
    launches: Launches, op: Callable[..., Any], make: Callable[[], list[torch.Tensor]]
) -> list[list[Any]]:
    """Each of five calls' result layout and named launches, on new tensors from ``make``
    each time (a plan's allocations must make what the full path's do)."""
    rounds = []
    for _ in range(5):
        tensors = make()
        launches.clear()
        result = op(*tensors)
        layout = (result.shape, result.stride(), result.dtype, result.device)
        rounds.append([layout, *_named(launches, tensors, result)])
    return rounds


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float16)


CASES = {
    "add": (ops.add, lambda: [_randn(40), _randn(40)]),
    "add broadcast": (ops.add, lambda: [_randn(5, 24), _randn(24)]),
    "add strided": (ops.add, lambda: [_randn(6, 40)[:, ::2], _randn(6, 20)]),
    "add 2-D": (ops.add, lambda: [_randn(6, 40), _randn(6, 40)]),  # a plan of stand-ins
    "silu 3-D": (ops.silu, lambda: [_randn(2, 3, 40)]),
    "mm transposed": (ops.mm, lambda: [_randn(20, 24), _randn(36, 24).t()]),
    "rms_norm": (lambda x, w: ops.rms_norm(x, w, 1e-5), lambda: [_randn(6, 40), _randn(40)]),
    "softmax": (lambda x: ops.softmax(x, dim=0), lambda: [_randn(6, 40)]),
    "sdpa decode": (
        lambda q, k, v: ops.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        lambda: [_randn(1, 4, 1, 16), _randn(1, 2, 70, 16), _randn(1, 2, 70, 16)],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_plan_launches_what_the_full_path_does(launches, case):
    op, make = CASES[case]
    with decoding.pinned_key_splits(3):  # attention's two kernels of flash-decoding
        rounds = _calls(launches, op, make)
    assert len(rounds[0]) > 1 and all(r == rounds[0] for r in rounds), rounds
    assert _planned(op)  # the later calls ran a plan


def _planned(op: Callable[..., Any]) -> bool:
    """Whether the op's memo holds a plan (not only the memo's own steps)."""
    return any(
        hasattr(entry, "__code__") and entry.__code__.co_filename == "<ninetoothed op plan>"
        for memo in list(_memo._MEMOS)
        for entry in memo._plans.values()
    )


@pytest.mark.parametrize("shape", [(40,), (5, 8)])  # 2-D: both views stood in by x
def test_one_tensor_twice_launches_as_the_full_path(launches, shape):
    x = _randn(*shape)
    rounds = _calls(launches, ops.add, lambda: [x, x])
    assert all(r == rounds[0] for r in rounds) and rounds[0][1][1][:2] == ("in0", "in0")
    assert _planned(ops.add)


def test_a_misaligned_view_meets_the_kernel_s_own_checks(launches):
    """The memo keys shape, strides, dtype and device, not alignment: the op's plan runs
    and the kernel's fast path, finding no plan of its own, takes its miss path."""
    y = _randn(40)
    for _ in range(3):
        ops.add(_randn(40), y)
    (fast,) = [f for f in plugins.adapter_for(y).__dict__["_launchers"].values() if f]
    kernel_plans = len(fast.plans)
    misaligned = _randn(41)[1:]  # 2 bytes past a 16-byte boundary
    launches.clear()
    result = ops.add(misaligned, y)
    assert launches == [("add", (misaligned.data_ptr(), y.data_ptr(), result.data_ptr()))]
    assert len(fast.plans) == kernel_plans + 1  # a plan of the kernel's, for the new alignment


def test_a_plan_follows_the_kernel_s_current_configuration(launches):
    """The op's plan launches the kernel's plan of the moment: after the kernel makes a
    new plan for the same call (a configuration chosen after the op's recording), the
    new one is launched."""
    x, y = _randn(40), _randn(40)
    for _ in range(3):
        ops.add(x, y)
    assert _planned(ops.add)
    (fast,) = [f for f in plugins.adapter_for(x).__dict__["_launchers"].values() if f]
    retuned: list[tuple[Any, ...]] = []
    stubbed = FastLauncher._launch_of
    FastLauncher._launch_of = lambda *a: lambda stream, *per_call: retuned.append(per_call)
    try:
        fast.miss((x, y, torch.empty_like(x)), {})  # the kernel's miss path: a new plan
    finally:
        FastLauncher._launch_of = stubbed
    launches.clear()
    retuned.clear()
    result = ops.add(x, y)
    assert not launches and retuned == [(x.data_ptr(), y.data_ptr(), result.data_ptr())]


def test_grad_requirements_take_the_right_path(launches):
    x, y = _randn(40), _randn(40)
    for _ in range(3):
        ops.add(x, y)
        ops.swiglu(x, y)
    wanting = x.clone().requires_grad_()
    assert ops.add(wanting, y).grad_fn is not None  # the differentiable path
    with pytest.raises(LaunchError, match="requires grad"):
        ops.swiglu(wanting, y)  # no backward: the kernel's miss path refuses it
    with torch.no_grad():
        assert ops.swiglu(wanting, y).grad_fn is None


def _tiles(x: Any, y: Any, z: Any) -> Any:
    return x.tile((16,)), y.tile((16,)), z.tile((16,))


def _blocks(x: Any, y: Any, z: Any) -> Any:
    block = Symbol("BLOCK", constexpr=True)
    return x.tile((block,)), y.tile((block,)), z.tile((block,))


def _sum(x: Any, y: Any, z: Any) -> None:
    z = x + y  # noqa: F841


def test_a_pinned_launch_sends_an_overlap_to_the_kernel_s_checks(launches):
    """A pinned launch skips the layout checks, not the overlap check: an output sharing
    memory with an input meets the kernel's refusal, as on its hot path."""
    kernel = ninetoothed.make(_tiles, _sum, (Tensor(1), Tensor(1), Tensor(1)))
    x, y, z = (torch.zeros(64) for _ in range(3))
    kernel(x, y, z)  # validated; the fast path is installed
    launch = ops.framework.launch_of(kernel)
    launch(x, y, z)
    assert _pinned(launch)[0][3] is not None  # a plan pinned
    launches.clear()
    launch(x, y, torch.zeros(64))  # other tensors, one layout: the pinned plan
    assert len(launches) == 1
    base = torch.zeros(68)
    with pytest.raises(LaunchError, match="overlap|share"):
        launch(base[4:], y, base[:64])  # z overlaps x, 16 bytes apart: both aligned


def test_a_pinned_launch_passes_other_call_forms_to_the_hot_path(launches):
    kernel = ninetoothed.make(_blocks, _sum, (Tensor(1), Tensor(1), Tensor(1)))
    x, y, z = (torch.zeros(64) for _ in range(3))
    kernel(x, y, z, 16)
    launch = ops.framework.launch_of(kernel)
    for _ in range(2):
        launches.clear()
        launch(x, y, z, 16)  # the constexpr by position: the kernel puts it in form
        assert launches == [("_sum", (x.data_ptr(), y.data_ptr(), z.data_ptr()))]


def test_a_kernel_forgets_its_plans_beyond_the_limit(launches, monkeypatch):
    """Shapes that keep changing (a growing key/value cache) must not add plans for as
    long as the process runs: beyond the limit a kernel forgets them all at once, and
    its next calls plan and launch as before."""
    from nt_triton._launch import launcher

    monkeypatch.setattr(launcher, "PLAN_LIMIT", 4)
    y = _randn(64)
    for size in range(1, 12):
        ops.add(_randn(size), y[:size])
    (fast,) = [f for f in plugins.adapter_for(y).__dict__["_launchers"].values() if f]
    assert 1 <= len(fast.plans) <= 4
    x = _randn(64)
    for _ in range(3):
        launches.clear()
        result = ops.add(x, y)
        assert launches == [("add", (x.data_ptr(), y.data_ptr(), result.data_ptr()))]
