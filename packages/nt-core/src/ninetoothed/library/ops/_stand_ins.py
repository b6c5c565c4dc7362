"""Plans that make no view they need not make: launches given stand-ins.

An op whose kernel wants other shapes than its tensors have makes views: the
element-wise ops view contiguous inputs of any shape as 1-D, allocate a 1-D
output and view it back in the inputs' shape.  A view costs the host a
framework call (about 1 us on a CPU, 2-3 on a GPU machine's host; three of
them doubled ``ops.add``'s host time on a 2-D input), and the launch reads
nothing of it but its address, which is its tensor's.

So where the framework offers ``launch_of_stand_ins(kernel, views)`` (a
launch of ``kernel`` that takes *stand-ins*, tensors of the same memory as its
arguments in other shapes, and makes the arguments with ``views(stand_ins)``
only where its checks send the call to the kernel's full path), :func:`rewrite`
changes a recorded plan so that:

* a view of a contiguous tensor that only launches read is not made: the
  launches get the tensor;
* an allocation that only launches and one view of it read is made in that
  view's shape, and the view is the allocation (both are row-major and
  dense: the same memory in either shape).

Each launch given a stand-in is the framework's launch of stand-ins, with the
views that turn them back into what the kernel was given when the op was
recorded.  If the framework has no such launch for some kernel, the plan is
left as recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Allocation", "Launch", "View", "rewrite", "viewer"]


@dataclass(frozen=True)
class View:
    """A recorded reshape of a contiguous tensor (a view of the same memory)."""

    line: int
    """The plan's line that makes it."""
    source: str
    """The plan's reference of the tensor viewed."""
    shape: tuple[int, ...]
    """The view's shape."""


@dataclass(frozen=True)
class Allocation:
    """A recorded allocation through the framework's ``allocation`` hook."""

    line: int
    """The plan's line that makes it."""
    allocation: Callable[..., Any]
    """The framework's ``allocation(like, shape, dtype)``."""
    args: tuple[Any, ...]
    """``allocation``'s positional arguments at recording."""
    kwargs: dict[str, Any]
    """``allocation``'s keywords at recording."""

    def shape(self) -> tuple[int, ...]:
        """The shape it allocates."""
        return tuple(self.args[1] if len(self.args) > 1 else self.kwargs["shape"])

    def shaped(self, shape: tuple[int, ...]) -> Any:
        """The same allocation in ``shape``: a function of no argument."""
        if len(self.args) > 1:
            return self.allocation(self.args[0], shape, *self.args[2:], **self.kwargs)
        return self.allocation(*self.args, **{**self.kwargs, "shape": shape})


@dataclass(frozen=True)
class Launch:
    """A recorded launch of an in-place framework's kernel."""

    line: int
    """The plan's line that makes it."""
    kernel: Any
    """The kernel launched."""
    arguments: list[str]
    """The plan's expressions of its arguments."""


Conversions = tuple[tuple[int, tuple[int, ...]], ...]
"""``(position, shape)``: the argument at ``position`` is viewed in ``shape`` for the kernel."""


def viewer(
    reshape: Callable[[Any, Sequence[int]], Any], conversions: Conversions
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """``views(stand_ins)``: the kernel's arguments, the stand-ins at the positions of
    ``conversions`` viewed in their shapes with ``reshape``."""

    def views(arguments: tuple[Any, ...]) -> tuple[Any, ...]:
        made = list(arguments)
        for position, shape in conversions:
            made[position] = reshape(made[position], shape)
        return tuple(made)

    return views


def rewrite(
    lines: list[str],
    uses: list[list[str]],
    returned: list[str],
    views: dict[str, View],
    allocations: dict[str, Allocation],
    launches: list[Launch],
    launch_of: Callable[[Any, Conversions], str | None],
    constant: Callable[[Any], str],
) -> list[str]:
    """The plan's ``lines`` with the views they need not make left out (see the module's
    docstring).  ``uses[i]``: the references line ``i`` reads; ``returned``: those the
    plan's result reads; ``views``, ``allocations``: by the name each line binds;
    ``launch_of(kernel, conversions)``: the plan's name of ``kernel``'s launch of
    stand-ins, or None; ``constant(value)``: the plan's name of a new constant."""
    reads = _Reads(uses, returned, launches)
    replaced: dict[int, str | None] = {}  # line -> its new text, None: left out
    passed = _passed(views, allocations, reads, constant, replaced)
    if not passed:
        return lines
    for launch in launches:
        conversions = tuple(
            (position, passed[argument][1])
            for position, argument in enumerate(launch.arguments)
            if argument in passed
        )
        if not conversions:
            continue
        launched = launch_of(launch.kernel, conversions)
        if launched is None:
            return lines  # no launch of stand-ins for this kernel: the plan as recorded
        arguments = [passed[a][0] if a in passed else a for a in launch.arguments]
        replaced[launch.line] = f"{launched}({', '.join(arguments)})"
    kept = []
    for index, line in enumerate(lines):
        text = replaced.get(index, line)
        if text is not None:
            kept.append(text)
    return kept


def _passed(
    views: dict[str, View],
    allocations: dict[str, Allocation],
    reads: _Reads,
    constant: Callable[[Any], str],
    replaced: dict[int, str | None],
) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each launch argument that may be a stand-in: ``argument -> (its stand-in, the shape
    the kernel takes it in)``; the lines this changes go to ``replaced`` (None: left out)."""
    passed: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, view in views.items():
        if reads.read(name) and not reads.others(name):  # read by launches only
            passed[name] = (view.source, view.shape)
            replaced[view.line] = None
    for name, view in views.items():
        allocation = allocations.get(view.source)
        if name in passed or allocation is None or reads.others(view.source) != [view.line]:
            continue
        if any(size < 0 for size in view.shape):  # a size the reshape infers (-1)
            continue
        # Made in the view's shape; the view is the allocation; launches view it back.
        new = constant(allocation.shaped(view.shape))
        replaced[allocation.line] = f"{view.source} = {new}()"
        replaced[view.line] = f"{name} = {view.source}"
        passed[view.source] = (view.source, allocation.shape())
    return passed


class _Reads:
    """Which lines of a plan read each reference, and how."""

    def __init__(self, uses: list[list[str]], returned: list[str], launches: list[Launch]):
        self._uses = uses
        self._launches = {launch.line: launch for launch in launches}
        self._readers: dict[str, list[int]] = {}
        for index, references in enumerate(uses):
            for reference in dict.fromkeys(references):
                self._readers.setdefault(reference, []).append(index)
        for reference in dict.fromkeys(returned):
            self._readers.setdefault(reference, []).append(-1)

    def read(self, reference: str) -> bool:
        """Whether anything reads ``reference``."""
        return reference in self._readers

    def others(self, reference: str) -> list[int]:
        """The lines that read ``reference`` other than as a launch's own argument (-1: the
        result); a launch that also reads it inside another argument counts."""
        found = []
        for index in self._readers.get(reference, ()):
            launch = self._launches.get(index)
            if launch is None or (
                launch.arguments.count(reference) != self._uses[index].count(reference)
            ):
                found.append(index)
        return found
