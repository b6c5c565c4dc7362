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
def test_a_copy_beside_the_grid_may_have_fewer_tiles(present_rows):
    kernel = make(double_and_copy)
    x = torch.randn(13, 6, device=DEVICE)  # four programs
    out = torch.full_like(x, float("nan"))
    present = torch.randn(present_rows, 6, device=DEVICE)
    cache = torch.full((16, 6), -7.0, device=DEVICE)
    slot = cache[8 : 8 + present_rows]  # rows past the slot must stay untouched
    kernel(x, out, present, slot)
    torch.testing.assert_close(out, 2 * x)
    torch.testing.assert_close(slot, present)
    assert (cache[:8] == -7).all() and (cache[8 + present_rows :] == -7).all()


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
