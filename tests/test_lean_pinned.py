"""The C pinned launch (``nt_triton/_launch/lean_pinned.c``), rule by rule, on stand-ins.

A library op's plan launches each kernel through a *pinned* launch: it checks
only what may differ between calls of one plan and launches the plan pinned
last, else hands the call to ``repin``.  The generated Python launch
(``hot_source.pinned_source``) and the C one must decide alike; the op-level
comparison runs both (``tests/library/test_memo_launches.py``).  Here each rule
of the C one meets a call that breaks it, with objects that stand in for
tensors (an address, a ``requires_grad``) and a launch that records.
"""

from __future__ import annotations

from typing import Any

import pytest

from nt_triton._launch import lean

pytestmark = pytest.mark.skipif(lean.built() is None, reason="no C compiler")


class _Tensor:
    def __init__(self, address: int, requires_grad: bool = False) -> None:
        self.address = address
        self.requires_grad = requires_grad

    def data_ptr(self) -> int:
        return self.address


class _Setup:
    """A Pinned over a plan for (tensor, scalar, tensor), writing the first tensor."""

    def __init__(self, multi_device: bool = True, allowed: int | None = 0) -> None:
        self.launched: list[tuple[Any, ...]] = []
        self.repinned: list[tuple[Any, ...]] = []
        self.device = [3]
        self.grad = [False]
        # Overlap bounds of the pair (0, 1): a gap in (-64, 64) overlaps, but for
        # ``allowed`` (an in-place pair's 0; None: no gap is allowed).
        plan = (None, 0, {}, self._launch, 3, None, (-64, 64, allowed))
        self.pinned: list[Any] = [plan, 7]
        self.generation = [7]
        self.launch = lean.built().Pinned(
            pinned=self.pinned, generation=self.generation, repin=self.repinned.append,
            stream=lambda device: 1000 + device,
            current_device=(lambda: self.device[0]) if multi_device else None,
            miss_mode=lambda: self.grad[0], pointer="data_ptr", miss_attribute="requires_grad",
            count=3, tensors=(0, 2), scalars=(1,), pairs=((0, 1),),
        )  # fmt: skip

    def _launch(self, *values: Any) -> str:
        self.launched.append(values)
        return "launched"


def test_it_launches_the_pinned_plan_with_the_stream_pointers_and_scalars():
    setup = _Setup()
    a, b = _Tensor(4096), _Tensor(8192)
    assert setup.launch(a, 2.5, b) == "launched"
    assert setup.launched == [(1003, 4096, 8192, 2.5)] and not setup.repinned
    assert setup.launch.pinned is setup.pinned


@pytest.mark.parametrize(
    "change",
    ["misaligned", "newer plan", "overlap", "same address, none allowed", "grad", "device",
     "more arguments"],
)  # fmt: skip
def test_each_difference_goes_to_repin(change):
    setup = _Setup(allowed=None if change.endswith("none allowed") else 0)
    a, b, scalar = _Tensor(4096), _Tensor(8192), 2.5
    extra: tuple[Any, ...] = ()
    if change == "misaligned":
        b = _Tensor(8194)
    elif change == "newer plan":
        setup.generation[0] = 8
    elif change == "overlap":
        b = _Tensor(4096 + 32)  # 32 bytes from the written tensor
    elif change.startswith("same address"):
        b = _Tensor(4096)
    elif change == "grad":
        setup.grad[0] = True
        b = _Tensor(8192, requires_grad=True)
    elif change == "device":
        setup.device[0] = 0
    else:
        extra = (16,)
    assert setup.launch(a, scalar, b, *extra) is None  # repin's (list.append's) result
    assert setup.repinned == [(a, scalar, b, *extra)] and not setup.launched


@pytest.mark.parametrize(
    "case",
    ["same address", "far apart", "grad mode without a tensor requiring it", "one device"],
)
def test_what_may_differ_still_launches(case):
    setup = _Setup(multi_device=case != "one device")
    a, b = _Tensor(4096), _Tensor(8192)
    if case == "same address":
        b = _Tensor(4096)  # the gap the bounds allow (an in-place pair)
    elif case == "far apart":
        b = _Tensor(4096 + (1 << 40))
    elif case == "grad mode without a tensor requiring it":
        setup.grad[0] = True
    else:
        setup.device[0] = 0  # no current-device check: never asked
    assert setup.launch(a, 1, b) == "launched" and not setup.repinned


def test_bad_calls_raise():
    setup = _Setup()
    with pytest.raises(TypeError, match="3 arguments"):
        setup.launch(_Tensor(4096), 1)
    with pytest.raises(TypeError, match="3 arguments"):
        setup.launch(_Tensor(4096), 1, b=_Tensor(0))
    with pytest.raises(AttributeError):
        setup.launch(object(), 1, _Tensor(4096))
    assert not setup.launched and not setup.repinned


def test_it_refuses_positions_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        lean.built().Pinned(
            pinned=[None, 0], generation=[0], repin=print, stream=print, current_device=None,
            miss_mode=None, pointer="data_ptr", miss_attribute=None, count=2, tensors=(0, 2),
            scalars=(), pairs=(),
        )  # fmt: skip
