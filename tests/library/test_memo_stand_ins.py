"""Plans that pass stand-ins: no view made where the launch reads only the memory.

The element-wise ops view contiguous inputs of any shape as 1-D and their 1-D
output back.  A recorded plan passes the tensors themselves to the kernel's
launch of stand-ins, allocates the output in its final shape, and makes the
views only where the launch's checks send a call to the kernel's full path
(:mod:`ninetoothed.library.ops._stand_ins`).  Launches are recorded on the
stand-in GPU (:mod:`support.stub_gpu`); the rewrite itself is checked on plans'
lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from support.stub_gpu import Launches, stubbed_gpu

from ninetoothed.errors import LaunchError
from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import _stand_ins
from ninetoothed.library.ops._stand_ins import Allocation, Launch, View
from nt_torch import hand_written, hopper_fp8, ops
from nt_torch._framework import TorchFramework


@pytest.fixture
def launches() -> Iterator[Launches]:
    """Launches recorded, blocks of 16 (several programs), plans forgotten before."""
    with stubbed_gpu() as recorded, pinned_block_sizes(16):
        yield recorded


@pytest.fixture
def reshapes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The shapes the framework's reshape is asked for, in order."""
    asked: list[tuple[int, ...]] = []
    real = TorchFramework.reshape

    def reshape(self: Any, tensor: Any, shape: Any) -> Any:
        asked.append(tuple(shape))
        return real(self, tensor, shape)

    monkeypatch.setattr(TorchFramework, "reshape", reshape)
    return asked


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float16)


@pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors
def test_a_planned_element_wise_call_makes_no_view(launches, reshapes):
    x, y = _randn(6, 40), _randn(6, 40)
    for _ in range(3):  # the full path, the recording, the plan
        ops.add(x, y)
        ops.silu(x)
    reshapes.clear()
    launches.clear()
    total, activated = ops.add(x, y), ops.silu(x)
    assert reshapes == []
    assert (total.shape, total.stride()) == ((6, 40), (40, 1))
    assert (activated.shape, activated.stride()) == ((6, 40), (40, 1))
    assert launches == [
        ("add", (x.data_ptr(), y.data_ptr(), total.data_ptr())),
        ("silu", (x.data_ptr(), activated.data_ptr())),
    ]


@pytest.mark.interpreter_only
def test_a_misaligned_stand_in_reaches_the_kernel_as_its_view(launches, reshapes):
    """The memo keys layouts, not alignment: the plan runs, the pinned launch finds the
    address misaligned and hands the hot path the views the kernel was recorded with."""
    y = _randn(6, 40)
    for _ in range(3):
        ops.add(_randn(6, 40), y)
    misaligned = _randn(241)[1:].view(6, 40)  # 2 bytes past a 16-byte boundary
    reshapes.clear()
    launches.clear()
    result = ops.add(misaligned, y)
    assert launches == [("add", (misaligned.data_ptr(), y.data_ptr(), result.data_ptr()))]
    assert reshapes == [(240,), (240,), (240,)]  # both inputs and the output, for the kernel
    assert result.shape == (6, 40)


@pytest.mark.interpreter_only
def test_a_stand_in_requiring_grad_meets_the_kernel_s_refusal(launches):
    x, y = _randn(6, 40), _randn(6, 40)
    for _ in range(3):
        ops.swiglu(x, y)
    wanting = x.clone().requires_grad_()
    with pytest.raises(LaunchError, match="requires grad"):
        ops.swiglu(wanting, y)  # no backward: the kernel's miss path refuses it
    with torch.no_grad():
        assert ops.swiglu(wanting, y).shape == (6, 40)


@pytest.mark.interpreter_only
def test_a_kernel_a_hand_written_route_takes_keeps_its_views(launches, reshapes, monkeypatch):
    """A route reads its calls' shapes (Hopper's Gluon kernels): no stand-ins for it."""
    monkeypatch.setattr(hand_written, "routed", lambda kernel: True)
    x, y = _randn(6, 40), _randn(6, 40)
    for _ in range(3):
        ops.add(x, y)
    reshapes.clear()
    ops.add(x, y)
    assert reshapes == [(240,), (240,), (6, 40)]  # the plan as recorded: views in and out


def test_a_kernel_is_routed_where_one_route_takes_it(monkeypatch):
    kernel = object()
    assert not hand_written.routed(kernel)
    monkeypatch.setattr(hopper_fp8, "_mode", lambda found: False if found is kernel else None)
    assert hand_written.routed(kernel)  # scaled_mm's route, float32 sums


@pytest.mark.interpreter_only
def test_the_interpreter_s_plans_compute_element_wise_ops_of_any_shape():
    """No stand-in GPU: the interpreter's kernels have no pinned launch, so plans keep
    their views; results against float64 on fresh tensors, call after call."""
    for _ in range(4):
        x, y = _randn(3, 5, 7), _randn(3, 5, 7)
        expected = x.double() + y.double()
        torch.testing.assert_close(ops.add(x, y).double(), expected, rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------ the rewrite itself

LINES = [
    "s0 = framework.reshape(args[0], (240, ))",
    "s1 = c0()",
    "c1(s0, s1)",
    "s3 = framework.reshape(s1, (6, 40, ))",
]
USES = [["args[0]"], [], ["s0", "s1"], ["s1"]]


def _allocation(like: Any, shape: Any, dtype: Any = None) -> Any:
    return ("allocation", tuple(shape))


VIEWS = {"s0": View(0, "args[0]", (240,)), "s3": View(3, "s1", (6, 40))}


def _rewrite(
    lines: list[str],
    uses: list[list[str]],
    launch_of: Any = None,
    returned: Any = ("s3",),
    views: dict[str, View] = VIEWS,
) -> tuple[list[str], dict[str, Any]]:
    constants: dict[str, Any] = {}

    def constant(value: Any) -> str:
        constants[f"k{len(constants)}"] = value
        return f"k{len(constants) - 1}"

    def stand_in_launch(kernel: Any, conversions: Any) -> str | None:
        return constant(("launch", kernel, conversions))

    rewritten = _stand_ins.rewrite(
        lines, uses, list(returned),
        views=views,
        allocations={"s1": Allocation(1, _allocation, ("like", (240,)), {})},
        launches=[Launch(2, "silu", ["s0", "s1"])],
        launch_of=launch_of or stand_in_launch,
        constant=constant,
    )  # fmt: skip
    return rewritten, constants


def test_views_only_launches_read_are_left_out_and_outputs_made_in_their_shape():
    lines, constants = _rewrite(LINES, USES)
    assert lines == ["s1 = k0()", "k1(args[0], s1)", "s3 = s1"]
    assert constants["k0"] == ("allocation", (6, 40))
    assert constants["k1"] == ("launch", "silu", ((0, (240,)), (1, (240,))))


def test_a_view_read_elsewhere_is_made():
    uses = [*USES, ["s0"]]  # a later line reads the input's view too
    lines, constants = _rewrite([*LINES, "s4 = framework.reshape(s0, (2, 120, ))"], uses)
    assert lines[0] == LINES[0]
    assert "k1(s0, s1)" in lines  # only the output is a stand-in
    assert constants["k1"] == ("launch", "silu", ((1, (240,)),))


def test_an_output_viewed_with_an_inferred_size_is_allocated_as_recorded():
    lines, constants = _rewrite(LINES, USES, views={"s3": View(3, "s1", (-1, 40))})
    assert lines == LINES and constants == {}


def test_a_view_a_launch_also_reads_inside_another_argument_is_made():
    lines = ["s0 = framework.reshape(args[0], (240, ))", "c1(s0, [s0])"]
    rewritten = _stand_ins.rewrite(
        lines, [["args[0]"], ["s0", "s0"]], [],
        views={"s0": View(0, "args[0]", (240,))}, allocations={},
        launches=[Launch(1, "silu", ["s0", "[s0]"])],
        launch_of=lambda kernel, conversions: "k0", constant=lambda value: "k1",
    )  # fmt: skip
    assert rewritten == lines


def test_a_kernel_without_a_launch_of_stand_ins_keeps_the_plan_as_recorded():
    lines, _ = _rewrite(LINES, USES, launch_of=lambda kernel, conversions: None)
    assert lines == LINES


def test_the_viewer_views_only_the_positions_it_is_given():
    views = _stand_ins.viewer(lambda t, shape: (t, tuple(shape)), ((1, (4,)),))
    assert views(("a", "b", "c")) == ("a", ("b", (4,)), "c")
