"""The torch ops' express lane (``nt_torch._express``): a repeated call's plan, reached in C.

The lane answers, for the op's most recent signatures, what four Python layers
answer (graph call, gradient check, the memo's tracing check and key).  Each
test here makes a signature's plan, then calls with one thing changed that
those layers read, and checks the call against a float64 reference and
whether the lane served it (``Lane.counts``): a call the plan may not serve
must take the Python path and compute what torch does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from support.base import ON_GPU

from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import _memo
from ninetoothed.runtime import plugins
from nt_torch import _express, _native, ops

pytestmark = pytest.mark.skipif(
    _express.extension() is None, reason="no C compiler: the express lane cannot be built"
)

DEVICE = "cuda" if ON_GPU else "cpu"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    """Every test starts with no plans, no lane entries and small blocks (several programs
    per launch under the interpreter).  The native module is waited for first, so that
    plans are made with its guard and allocation wherever it can be built, not with
    whichever the background build has reached."""
    _native.extension()
    _memo.forget()
    with pinned_block_sizes(16):
        yield
    _memo.forget()


def _served(op: Any) -> int:
    """How many calls the op's lane has served so far."""
    return 0 if op._lane is None else int(op._lane.counts()["hits"])


def _planned(call: Callable[[], Any]) -> None:
    """Call twice: the second call records the plan and arms the lane."""
    call()
    call()


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def _close(got: torch.Tensor, expected: torch.Tensor) -> None:
    assert got.shape == expected.shape and got.dtype == expected.dtype
    tolerance = 1e-2 if got.dtype in (torch.float16, torch.bfloat16) else 1e-5
    torch.testing.assert_close(got.double(), expected.double(), rtol=tolerance, atol=tolerance)


def test_a_repeated_call_is_served_by_the_lane_and_computes_the_sum():
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    assert ops._GraphCall.__call__ is _express.extension().dispatch
    before = _served(ops.add)
    a, b = _randn(37), _randn(37)  # other tensors of the same signature
    result = ops.add(a, b)
    assert _served(ops.add) == before + 1
    _close(result, (a.double() + b.double()).float())


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(lambda x: x[:36], id="shape"),
        pytest.param(lambda x: x.to(torch.float16), id="dtype"),
        pytest.param(lambda x: torch.randn(74, device=x.device)[::2], id="strides"),
        pytest.param(lambda x: x[:1], id="size-1"),
        pytest.param(lambda x: x[:0], id="empty"),
    ],
)
def test_another_tensor_signature_takes_the_python_path(other):
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    a = other(_randn(37))
    b = _randn(*a.shape, dtype=a.dtype)
    before = _served(ops.add)
    result = ops.add(a, b)
    assert _served(ops.add) == before
    _close(result, (a.double() + b.double()).to(a.dtype))


def test_one_tensor_passed_twice_is_another_signature():
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    before = _served(ops.add)
    _close(ops.add(x, x), (2 * x.double()).float())
    assert _served(ops.add) == before
    # Planned too, the aliased call computes its sum, and the plan of distinct tensors
    # still serves distinct ones.  The native guard answers for a tensor passed twice,
    # so its plan serves the aliased call; PyTorch's TensorGuards answers False for it,
    # and then the Python path serves it.
    _planned(lambda: ops.add(x, x))
    a, b = _randn(37), _randn(37)
    before = _served(ops.add)
    _close(ops.add(b, b), (2 * b.double()).float())
    aliased = _served(ops.add) - before
    _close(ops.add(a, b), (a.double() + b.double()).float())
    assert _served(ops.add) == before + aliased + 1
    assert aliased == (0 if _native.extension() is None else 1)


def test_another_scalar_value_takes_the_python_path():
    x, weight = _randn(5, 40), _randn(40)

    def reference(eps: float) -> torch.Tensor:
        return F.rms_norm(x.double(), (40,), weight.double(), eps).float()

    _planned(lambda: ops.rms_norm(x, weight, 0.5))
    before = _served(ops.rms_norm)
    _close(ops.rms_norm(x, weight, 0.25), reference(0.25))
    assert _served(ops.rms_norm) == before
    _close(ops.rms_norm(x, weight, 0.5), reference(0.5))
    assert _served(ops.rms_norm) == before + 1


def test_a_float_is_compared_by_its_bits():
    q, k, v = (_randn(1, 2, 20, 16) for _ in range(3))
    _planned(lambda: ops.scaled_dot_product_attention(q, k, v, scale=0.0))
    before = _served(ops.scaled_dot_product_attention)
    result = ops.scaled_dot_product_attention(q, k, v, scale=-0.0)
    assert _served(ops.scaled_dot_product_attention) == before  # -0.0 is not 0.0
    expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=-0.0)
    _close(result, expected.float())


def test_keywords_are_part_of_the_signature():
    q, k, v = (_randn(1, 2, 40, 16) for _ in range(3))

    def reference(causal: bool) -> torch.Tensor:
        return F.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), is_causal=causal
        ).float()

    _planned(lambda: ops.scaled_dot_product_attention(q, k, v, is_causal=True))
    op = ops.scaled_dot_product_attention
    before = _served(op)
    _close(op(q, k, v, is_causal=True), reference(True))
    assert _served(op) == before + 1
    _close(op(q, k, v, is_causal=False), reference(False))
    _close(op(q, k, v, True), reference(True))  # by position: another form of call
    assert _served(op) == before + 1


def test_a_tensor_requiring_grad_is_recorded_for_autograd():
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    a = _randn(37).requires_grad_()
    before = _served(ops.add)
    result = ops.add(a, y)
    assert _served(ops.add) == before
    assert result.grad_fn is not None
    result.sum().backward()
    assert a.grad is not None and torch.equal(a.grad, torch.ones_like(a))


def test_a_plan_made_under_no_grad_serves_no_call_in_grad_mode():
    a, y = _randn(37).requires_grad_(), _randn(37)
    with torch.no_grad():
        _planned(lambda: ops.add(a, y))
        before = _served(ops.add)
        assert ops.add(a, y).grad_fn is None
        assert _served(ops.add) == before + 1
    result = ops.add(a, y)
    assert _served(ops.add) == before + 1
    assert result.grad_fn is not None


def test_a_dispatch_mode_takes_the_python_path():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    before = _served(ops.add)
    with Seen() as mode:
        result = ops.add(x, y)
    assert _served(ops.add) == before
    assert any("ninetoothed" in name for name in mode.names), mode.names
    _close(result, (x.double() + y.double()).float())


def test_a_pinned_setting_change_takes_the_python_path():
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    before = _served(ops.add)
    with pinned_block_sizes(8):
        result = ops.add(x, y)
    assert _served(ops.add) == before
    _close(result, (x.double() + y.double()).float())
    ops.add(x, y)
    assert _served(ops.add) == before + 1


def test_a_plugin_call_guard_is_called_and_its_error_raised(monkeypatch):
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    calls: list[int] = []
    monkeypatch.setattr(plugins, "call_guard", lambda: calls.append(1))
    before = _served(ops.add)
    _close(ops.add(x, y), (x.double() + y.double()).float())
    assert calls and _served(ops.add) == before + 1

    def refusing() -> None:
        raise RuntimeError("not here")

    monkeypatch.setattr(plugins, "call_guard", refusing)
    with pytest.raises(RuntimeError, match="not here"):
        ops.add(x, y)


def test_forgotten_plans_leave_the_lane():
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    assert ops.add._lane.counts()["entries"] == 1
    _memo.forget()
    assert ops.add._lane.counts()["entries"] == 0
    before = _served(ops.add)
    _close(ops.add(x, y), (x.double() + y.double()).float())
    assert _served(ops.add) == before


def test_more_signatures_than_the_lane_holds_stay_correct():
    sizes = [17, 33, 48, 5, 70, 9]
    pairs = [(_randn(n), _randn(n)) for n in sizes]
    for x, y in pairs:
        _planned(lambda x=x, y=y: ops.add(x, y))
    assert ops.add._lane.counts()["entries"] == 4
    before = _served(ops.add)
    for _ in range(2):
        for x, y in pairs:
            _close(ops.add(x, y), (x.double() + y.double()).float())
    assert before < _served(ops.add) <= before + 12


def test_two_threads_with_their_own_signatures():
    failures: list[BaseException] = []

    def work(size: int) -> None:
        try:
            for _ in range(20):
                x, y = _randn(size), _randn(size)
                _close(ops.add(x, y), (x.double() + y.double()).float())
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=work, args=(size,)) for size in (31, 47)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def test_the_knob_turns_the_lane_off():
    script = (
        "import torch\nfrom nt_torch import ops\n"
        "x = torch.randn(9)\n"
        "for _ in range(4): r = ops.add(x, x)\n"
        "assert torch.equal(r, x + x)\n"
        "print(ops.add._lane, ops._GraphCall.__call__.__class__.__name__)\n"
    )
    environment = {**os.environ, _express.KNOB: "off", "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "function"]


# -- the Lane type itself, with stand-in plans: each rule of ``_express.c`` alone ------------


def _plan(framework: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return ("plan", framework, args, kwargs)


def _slow(*args: Any, **kwargs: Any) -> Any:
    return ("slow", args, kwargs)


def _lane(checks: tuple[Any, ...] = (), settings: tuple[Any, ...] = ()) -> Any:
    return _express.extension().Lane(
        slow=_slow, framework="hook", checks=checks, grad_enabled=torch.is_grad_enabled,
        plugins=plugins, no_guard=plugins.no_call_guard, settings=settings,
    )  # fmt: skip


def _always(*tensors: Any) -> bool:
    return True


def test_a_lane_serves_the_recorded_form_by_its_plan():
    t, u = torch.zeros(2), torch.zeros(3)
    lane = _lane()
    lane.arm((t, 1, "mode"), {"x": 2.0, "flag": None}, (True, False, False, False, False),
             _always, _plan)  # fmt: skip
    assert lane(u, 1, "mode", x=2.0, flag=None) == ("plan", "hook", (u, 1, "mode"),
                                                     {"x": 2.0, "flag": None})  # fmt: skip
    served = [
        lane(u, 1, "mode", flag=None, x=2.0),  # keywords in another order
        lane(u, 1, "mode", y=2.0, flag=None),  # another keyword
        lane(u, 1, "mode", 2.0, flag=None),  # by position
        lane(u, True, "mode", x=2.0, flag=None),  # a bool is not an int
        lane(u, 1.0, "mode", x=2.0, flag=None),  # nor is a float
        lane(u, 1, "other", x=2.0, flag=None),
        lane(u, 1, "mode", x=2.0),
        lane(1, 1, "mode", x=2.0, flag=None),  # an int where the tensor was
    ]
    assert [result[0] for result in served] == ["slow"] * len(served)
    assert lane.counts() == {"entries": 1, "hits": 1, "misses": len(served)}


def test_a_call_without_keywords_gives_the_plan_a_read_only_empty_mapping():
    """The lane shares one empty mapping among calls without keywords: a plan that
    wrote into it would change every later call's, so it must refuse writes."""
    t = torch.zeros(2)
    lane = _lane()
    lane.arm((t,), {}, (True,), _always, _plan)
    first, second = lane(t), lane(t)
    assert first[0] == second[0] == "plan"
    assert dict(first[3]) == {} and first[3] is second[3]
    with pytest.raises(TypeError):
        first[3]["x"] = 1  # type: ignore[index]
    lane.arm((t,), {"x": 1}, (True, False), _always, _plan)
    named = lane(t, x=1)
    assert named[0] == "plan" and named[3] == {"x": 1} and type(named[3]) is dict


def test_a_lane_serves_only_the_recorded_number_of_arguments():
    t = torch.zeros(2)
    lane = _lane()
    lane.arm((t, 7), {}, (True, False), _always, _plan)
    assert [lane(t)[0], lane(t, 7, 8)[0], lane(t, 7)[0]] == ["slow", "slow", "plan"]


def test_a_lane_asks_the_guard_with_the_tensors_in_order():
    asked: list[tuple[Any, ...]] = []

    def guard(*tensors: Any) -> bool:
        asked.append(tensors)
        return tensors[0].numel() == 2

    t, u, v = torch.zeros(2), torch.zeros(3), torch.zeros(5)
    lane = _lane()
    lane.arm((t, 7, u), {}, (True, False, True), guard, _plan)
    assert lane(t, 7, v)[0] == "plan"
    assert lane(v, 7, t)[0] == "slow"
    assert asked == [(t, v), (v, t)]


def test_a_lane_takes_the_python_path_while_a_check_holds():
    held = [False]
    t = torch.zeros(2)
    lane = _lane(checks=((lambda: held[0], ()), (lambda value: value, (False,))))
    lane.arm((t,), {}, (True,), _always, _plan)
    assert lane(t)[0] == "plan"
    held[0] = True
    assert lane(t)[0] == "slow"


def test_a_check_or_guard_that_raises_leaves_the_call_to_the_python_path():
    def guard(*tensors: Any) -> bool:
        raise RuntimeError("a read the tensor refuses")

    t = torch.zeros(2)
    lane = _lane()
    lane.arm((t,), {}, (True,), guard, _plan)
    assert lane(t)[0] == "slow"


class _Live:
    """A setting read afresh, as the ops' float32 product precision is."""

    def __init__(self) -> None:
        self.value = "ieee"

    def __getitem__(self, index: int) -> str:
        return self.value


def test_a_lane_serves_only_while_the_settings_hold():
    pinned, live = [None], _Live()
    t = torch.zeros(2)
    lane = _lane(settings=(pinned, live))
    lane.arm((t,), {}, (True,), _always, _plan)
    assert lane(t)[0] == "plan"
    pinned[0] = (16,)  # type: ignore[call-overload]
    assert lane(t)[0] == "slow"
    pinned[0] = None
    live.value = "tf32"
    assert lane(t)[0] == "slow"
    live.value = "ieee"
    assert lane(t)[0] == "plan"


def test_a_lane_keeps_the_four_most_recent_signatures():
    lane = _lane()
    tensors = [torch.zeros(n) for n in range(1, 7)]

    def guard_of(size: int) -> Callable[..., bool]:
        return lambda tensor: tensor.numel() == size

    for tensor in tensors[:5]:
        lane.arm((tensor,), {}, (True,), guard_of(tensor.numel()), _plan)
    assert lane.counts()["entries"] == 4
    assert lane(tensors[0])[0] == "slow"  # the oldest fell out
    assert [lane(t)[0] for t in reversed(tensors[1:5])] == ["plan"] * 4
    lane.arm((tensors[5],), {}, (True,), guard_of(6), _plan)
    assert lane(tensors[5])[0] == "plan"
    assert lane(tensors[4])[0] == "slow"  # the least recently served went
    assert lane(tensors[1])[0] == "plan"
    lane.disarm()
    assert lane.counts()["entries"] == 0 and lane(tensors[5])[0] == "slow"


def test_while_torch_compiles_the_lane_stands_aside(monkeypatch):
    x, y = _randn(37), _randn(37)
    _planned(lambda: ops.add(x, y))
    monkeypatch.setattr(torch.compiler, "_is_compiling_flag", True, raising=False)
    assert torch.compiler.is_compiling()
    before = _served(ops.add)
    _close(ops.add(x, y), (x.double() + y.double()).float())
    assert _served(ops.add) == before


def test_a_signature_the_lane_cannot_arm_is_served_by_the_python_path(monkeypatch):
    class Refusing:
        """A lane whose arming fails (an argument it cannot read)."""

        def arm(self, *recorded: Any) -> None:
            raise RuntimeError("cannot read this argument")

    x, y = _randn(37), _randn(37)
    ops.add(x, y)  # a first call: the extension decided, the dispatch in place
    monkeypatch.setattr(ops.add, "_lane", Refusing())
    for _ in range(3):  # the second call records, the lane refuses, the calls go on
        a, b = _randn(37), _randn(37)
        _close(ops.add(a, b), (a.double() + b.double()).float())


def test_a_lane_calls_the_plugins_call_guard_first():
    import types

    calls: list[str] = []
    hooks = types.SimpleNamespace(call_guard=lambda: calls.append("guard"))
    lane = _express.extension().Lane(
        slow=_slow, framework="hook", checks=(), grad_enabled=torch.is_grad_enabled,
        plugins=hooks, no_guard=plugins.no_call_guard, settings=(),
    )  # fmt: skip
    t = torch.zeros(2)
    lane.arm((t,), {}, (True,), _always, _plan)
    assert lane(t)[0] == "plan" and calls == ["guard"]
    # A call the lane leaves meets the guard on the Python path only, not twice.
    assert lane(t, 1)[0] == "slow" and calls == ["guard"]

    def refusing() -> None:
        raise RuntimeError("not here")

    hooks.call_guard = refusing  # its error meets the caller on the Python path
    assert lane(t)[0] == "slow"
    hooks.call_guard = plugins.no_call_guard  # none: nothing called
    assert lane(t)[0] == "plan" and calls == ["guard"]
