"""Fixtures of the kernel library's tests: the ops under test, poisoned outputs, pinned blocks.

``ops`` is the op module of the ``framework`` under test (``nt_torch.ops`` …),
its outputs allocated full of NaN (a kernel that leaves an element unwritten
fails the comparison).  Block sizes are pinned small (16, or what a test asks
for with ``@pytest.mark.block(n)``): under Triton's interpreter, tuning would
pick the largest configuration, one program for a small test, and hide every
bug of a second program.  On the GPU nothing is pinned: the ops tune as users
see them.  ``passes`` records the split-K products the ops run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.base import ON_GPU, poison_outputs

from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import split


@pytest.fixture
def ops(
    framework: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The framework's ops, with NaN-filled outputs and (on the CPU) pinned blocks."""
    module = framework.ops
    poison_outputs(monkeypatch, module.framework, framework.poisoned_like)
    marker = request.node.get_closest_marker("block")
    if ON_GPU:
        yield module
        return
    with pinned_block_sizes(marker.args[0] if marker else 16):
        yield module


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The chunk counts of the split-K products the ops run (one entry per first pass)."""
    counts: list[int] = []
    original = split.partial_products

    def recorded(framework: Any, found: Any, operands: Any, shape: Any, count: int) -> Any:
        counts.append(count)
        return original(framework, found, operands, shape, count)

    monkeypatch.setattr(split, "partial_products", recorded)
    return counts
