"""Parameters whose values never meet need not be sized alike.

ntops's attention with a KV cache copies a one-token ``present_key`` into
its cache slot in the kernel that runs attention over the query: both are
tiled alike and read at the program's index, but nothing the copy reads or
writes meets the query's values.  Their sizes are therefore not tied, and the
copy's tensors may have fewer tiles than the grid has programs (the
programs past them find every element masked); they may not have more (no
program would reach the rest).  Where values do meet, the sizes are tied as
before.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError
from ninetoothed.spec._flow import flow_groups

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"
BLOCK = 4


def rows(x, out, present, slot):
    return tuple(t.tile((BLOCK, -1)) for t in (x, out, present, slot))


def double_and_copy(x, out, present, slot):
    out = 2 * x  # noqa: F841
    slot = present  # noqa: F841


def double_plus_present(x, out, present, slot):
    out = 2 * x + present  # noqa: F841
    slot = present  # noqa: F841


def make(application):
    return ninetoothed.make(rows, application, tuple(Tensor(2) for _ in range(4)))


def test_the_groups_of_an_application():
    names = ["x", "out", "present", "slot"]
    assert set(flow_groups(double_and_copy, names)) == {
        frozenset({"x", "out"}),
        frozenset({"present", "slot"}),
    }
    assert flow_groups(double_plus_present, names) == (frozenset(names),)


@pytest.mark.parametrize("present_rows", [1, 4, 7])
def test_a_copy_beside_the_grid_may_have_fewer_tiles(framework, present_rows):
    kernel = make(double_and_copy)
    rng = np.random.default_rng()
    x = rng.standard_normal((13, 6)).astype(np.float32)  # four programs
    present = rng.standard_normal((present_rows, 6)).astype(np.float32)
    cache = np.full((16, 6), -7.0, dtype=np.float32)
    base = framework.from_numpy(cache)
    # The slot is rows 8.. of a cache, whose other rows must stay untouched; where
    # the framework has no views (JAX), a poisoned array of its own.
    slot = framework.view(base, (present_rows, 6), (6, 1), 8 * 6)
    in_cache = slot is not None
    if not in_cache:
        slot = framework.poisoned((present_rows, 6), "float32")
    arguments = [framework.from_numpy(x), framework.poisoned(x.shape, "float32")]
    out, written = framework.call(
        kernel, [*arguments, framework.from_numpy(present), slot], {}, outputs=[1, 3]
    )
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_array_equal(written, present)
    if in_cache:
        rows = framework.to_numpy(base)
        assert (rows[:8] == -7).all() and (rows[8 + present_rows :] == -7).all()


def test_a_copy_with_more_tiles_than_the_grid_is_refused():
    kernel = make(double_and_copy)
    x, present = torch.randn(5, 6, device=DEVICE), torch.randn(9, 6, device=DEVICE)
    with pytest.raises(LaunchError, match="'present' has outermost shape .* larger than"):
        kernel(x, torch.empty_like(x), present, torch.empty_like(present))


def test_values_that_meet_are_still_sized_alike():
    kernel = make(double_plus_present)
    x, present = torch.randn(13, 6, device=DEVICE), torch.randn(1, 6, device=DEVICE)
    with pytest.raises(LaunchError, match="'x' .* and 'present' .* must have the same size"):
        kernel(x, torch.empty_like(x), present, torch.empty_like(present))


def stand_in(x, out, present, slot):
    """Writes nothing: no group stands apart."""


def only_reads_present(x, out, present, slot):
    out = 2 * x  # noqa: F841
    present  # noqa: B018


def test_a_group_that_writes_nothing_stays_with_the_grid():
    names = ["x", "out", "present", "slot"]
    assert flow_groups(stand_in, names) == (frozenset(names),)
    assert set(flow_groups(only_reads_present, names)) == {frozenset(names)}
    kernel = make(only_reads_present)
    x, present = torch.randn(13, 6, device=DEVICE), torch.randn(1, 6, device=DEVICE)
    with pytest.raises(LaunchError, match="'x' .* and 'present' .* must have the same size"):
        kernel(x, torch.empty_like(x), present, torch.empty_like(present))


def fold_into(total, x):
    total += x  # an inlined helper assigns the caller's variable


def through_a_helper(x, out, present, slot):
    total = 0.0
    fold_into(total, x)
    slot = present + total  # noqa: F841 - carries x's values through the helper
    out = x  # noqa: F841


def test_a_helper_that_assigns_the_callers_variable_carries_its_values():
    names = ["x", "out", "present", "slot"]
    assert flow_groups(through_a_helper, names) == (frozenset(names),)
