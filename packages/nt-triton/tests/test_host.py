"""Host code (``nt_triton._host``): the per-call function generated from the signature.

``TritonKernel.prepare`` *is* the generated function; it returns the launch
plan (arguments in signature order, grid, pinned meta values) and checks, on
concrete sizes, what the arrangement requires.
"""

from __future__ import annotations

import pytest

import ninetoothed
from ninetoothed import Symbol, Tensor
from ninetoothed.errors import LaunchError
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton._host import LaunchPlan
from nt_triton._kernel import TritonKernel

B = Symbol("B", meta=True)
C = Symbol("C", constexpr=True)


def copy(x, y):
    y = x  # noqa: F841


def generated(arrangement, tensors) -> TritonKernel:
    kernel = ninetoothed.make(arrangement, copy, tensors)
    assert isinstance(kernel.generated, TritonKernel)
    return kernel.generated


def info(size: int, stride: int = 1) -> TensorInfo:
    """A described vector (host code reads only shapes and strides)."""
    return TensorInfo((size,), (stride,), "float32", "cpu", 0)


TUNED = generated(lambda x, y: (x.tile((B,)), y.tile((B,))), (Tensor(1), Tensor(1)))
PINNED_TWO = generated(
    lambda x, y, N=Symbol("N", meta=True): (x.tile((B, N)), y.tile((B, N))),  # noqa: B008
    (Tensor(2), Tensor(2)),
)
PADDED = generated(lambda x, y: (x.tile((C,)), y.tile((C,))), (Tensor(1), Tensor(1)))


def test_arguments_follow_the_signature() -> None:
    plan = TUNED.prepare([info(100), info(100)], ["xp", "yp"], {})
    assert isinstance(plan, LaunchPlan)
    names = [p.name for p in TUNED.signature.host]
    assert dict(zip(names, plan.arguments)) == {
        "x_pointer": "xp",
        "y_pointer": "yp",
        "x_size_0": 100,
        "x_stride_0": 1,
        "y_size_0": 100,
        "y_stride_0": 1,
        "ninetoothed_int64": False,
        # 100 = 4 * 25: tiles of B divide it only for B <= 4.
        "ninetoothed_aligned_0": 4,
        "ninetoothed_aligned_1": 4,
    }
    assert callable(plan.grid) and plan.meta is None
    assert plan.grid({"B": 32}) == (4,)
    first = TUNED.configurations[0].values["B"]
    assert TUNED.concrete_grid(plan) == (((100 + first - 1) // first,), {"B": first})


def test_pinned_meta_values() -> None:
    plan = TUNED.prepare([info(100), info(100)], [0, 0], {"B": 64})
    assert plan.meta == {"B": 64}
    assert TUNED.concrete_grid(plan) == ((2,), {"B": 64})


def test_shapes_that_do_not_fit_are_reported() -> None:
    plan = TUNED.prepare([info(100), info(10)], [0, 0], {"B": 16})
    with pytest.raises(LaunchError, match=r"the arranged 'y' has outermost shape \(1,\)"):
        TUNED.concrete_grid(plan)
    with pytest.raises(LaunchError, match="give every meta symbol"):
        matrix = TensorInfo((8, 8), (8, 1), "float32", "cpu", 0)
        PINNED_TWO.prepare([matrix, matrix], [0, 0], {"B": 16})


def test_64_bit_offsets_only_where_needed() -> None:
    small = TUNED.prepare([info(100), info(100)], [0, 0], {})
    large = TUNED.prepare([info(100), info(100, stride=2**30)], [0, 0], {})
    flag = [p.name for p in TUNED.signature.host].index("ninetoothed_int64")
    assert (small.arguments[flag], large.arguments[flag]) == (False, True)


def test_host_pads_constexpr_tile_sizes() -> None:
    plan = PADDED.prepare([info(10), info(10)], [0, 0], {"C": 5})
    values = dict(zip((p.name for p in PADDED.signature.host), plan.arguments))
    assert values["C"] == 5 and values["x_padded_size_1_0"] == 8
    assert plan.grid == (2,) and plan.meta is None
    assert "x_padded_size_1_0 = next_power_of_two(C)" in PADDED.host_source


def test_host_source_is_shown_in_the_cached_file() -> None:
    for line in TUNED.host_source.splitlines():
        assert f"# {line}" in TUNED.source
