"""The fast path's hot function, written as Python source per kernel and framework.

:func:`hot_source` writes ``call(*args, **kwargs)``, which reads the
arguments, finds the call's plan (the most recent one, checked by the
framework's guard, else the dict of plans) and launches it, the same
function as ``method(_kernel, *args, **kwargs)`` (the kernel class's
``__call__``: see ``ninetoothed.runtime.make``), and ``key(args, kwargs)``,
which computes the dict key of a call.  Specialised to
the kernel's parameter count and the framework's reads (:class:`HostReads`):
no loops, no keyword dict unless keywords are given, locals for everything.
:class:`~nt_triton._launch.launcher.FastLauncher` runs the source with the
names it uses (``plans``, ``mru``, ``miss`` …) bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ninetoothed.runtime.hookspecs import HostReads

__all__ = ["hot_source", "pinned_source", "scalar_value"]


def scalar_value(value: Any) -> tuple[type, Any]:
    """A constexpr scalar's key: its type with its value (``True`` must not hit ``1``)."""
    return (type(value), value)


def hot_source(
    count: int,
    tensors: Sequence[int],
    scalars: Sequence[int],
    reads: HostReads,
    *,
    multi_device: bool,
    by_value: frozenset[int] = frozenset(),
    traced: bool = True,
    pairs: Sequence[tuple[int, int]] = (),
) -> str:
    """The hot function ``call(*args, **kwargs)``, its twin ``method(_kernel, *args,
    **kwargs)`` and ``key(args, kwargs)``, as source.

    One function per kernel and framework: the arguments unpacked by
    position, each tensor's pointer and key facts read once, the most recent
    plan checked, else the dict; any exception goes to ``miss``.  Scalars
    are keyed by Triton's class (``int_class``), those in ``by_value``
    (constexprs) by value.  ``traced``: calls made while the framework traces
    (``reads.traced``) go to ``miss``; False leaves that check out.  ``pairs``:
    the tensors ``(w, o)`` (indices among the tensors) whose pointers' distance
    the plan's bounds check; a call where they overlap goes to ``miss``, whose
    validation refuses it.
    """
    names = [f"t{i}" if i in tensors else f"s{i}" for i in range(count)]
    unpack = ", ".join(names) + ("," if count == 1 else "")
    pointers = [f"p{i}" for i in range(len(tensors))]
    reads_lines = [
        f"{p} = {reads.pointer_read.format(names[t])}" for p, t in zip(pointers, tensors)
    ]
    ored = " | ".join(pointers) or "0"
    each = ", ".join(f"{p} & 15" for p in pointers) + ("," if len(pointers) == 1 else "")
    facts = [read.format(names[t]) for t in tensors for read in reads.key_reads]
    classes = ", ".join(
        f"scalar_{'value' if s in by_value else 'class'}({names[s]})" for s in scalars
    )
    classes_tuple = f"({classes},)" if scalars else "()"
    key_items = [*facts, f"({ored}) & 15 and ({each})", "tuple(kwargs.items()) if kwargs else None"]
    if scalars:
        key_items.append("classes")
    key_text = ", ".join(key_items)
    tensor_args = ", ".join(names[t] for t in tensors)
    per_call = ", ".join(pointers + [names[s] for s in scalars])
    guard_check = f"not plan[0]({tensor_args})" if tensors else "False"
    scalar_check = " or classes != plan[5]" if scalars else ""
    body = ["def call(*args, **kwargs):"]
    if traced and reads.traced is not None:
        body += ["    if traced():", "        return miss(args, kwargs)"]
    body += [
        "    try:",
        f"        {unpack} = args" if count else "        () = args",
        *(f"        {line}" for line in reads_lines),
    ]
    if scalars:
        body.append(f"        classes = {classes_tuple}")
    body += [
        "        plan = mru[0]",
        f"        if ({ored}) & 15 != plan[1] or kwargs != plan[2]{scalar_check} or {guard_check}:",
        f"            plan = plans[({key_text},)]",
        "            mru[0] = plan",
        "    except Exception:",
        "        return miss(args, kwargs)",
    ]
    body += _after_plan(pairs, reads, [names[t] for t in tensors], "miss(args, kwargs)")
    if multi_device:
        body += [
            "    device = plan[4]",
            "    if device != current_device():",
            f"        return switched(plan, {per_call})",
            f"    return plan[3](stream(device), {per_call})",
        ]
    else:
        body.append(f"    return plan[3](stream(plan[4]), {per_call})")
    key = [
        "def key(args, kwargs):",
        f"    {unpack} = args" if count else "    () = args",
        *(f"    {line}" for line in reads_lines),
    ]
    if scalars:
        key.append(f"    classes = {classes_tuple}")
    key.append(f"    return ({key_text},)")
    method = ["def method(_kernel, *args, **kwargs):", *body[1:]]
    return "\n\n\n".join("\n".join(lines) for lines in (body, method, key)) + "\n"


def _after_plan(
    pairs: Sequence[tuple[int, int]], reads: HostReads, tensors: Sequence[str], miss: str
) -> list[str]:
    """The checks after a plan is found (lines of a function body): pointers of
    tensors ``pairs`` that overlap, tensors the framework sends to ``miss``."""
    lines = []
    if pairs:
        overlaps = " or ".join(
            f"bounds[{3 * k}] < (gap := p{w} - p{o}) < bounds[{3 * k + 1}] "
            f"and gap != bounds[{3 * k + 2}]"
            for k, (w, o) in enumerate(pairs)
        )
        lines += ["    bounds = plan[6]", f"    if {overlaps}:", f"        return {miss}"]
    if reads.miss_when is not None and tensors:
        tested = " or ".join(reads.miss_when[1].format(t) for t in tensors)
        lines += [f"    if miss_mode() and ({tested}):", f"        return {miss}"]
    return lines


def pinned_source(
    count: int,
    tensors: Sequence[int],
    scalars: Sequence[int],
    reads: HostReads,
    *,
    multi_device: bool,
    pairs: Sequence[tuple[int, int]] = (),
) -> str:
    """``launch(*arguments)``: the launch of the plan in ``pinned[0]`` for a caller whose
    calls all have one layout and one set of scalars (a recorded op plan), by position
    (more arguments than the kernel's parameters go to ``repin``).

    It reads the pointers and checks what differs between such calls: alignment,
    overlaps, tensors the framework sends to the miss path, the current device, and
    that the kernel made no plan since the pin (``generation``); any of those goes
    to ``repin(arguments)``, which takes the hot path and pins its plan again.  No
    key, no guard, no tracing check: the caller's own key fixes the layout and it
    runs untraced calls only.
    """
    names = [f"t{i}" if i in tensors else f"s{i}" for i in range(count)]
    listed = ", ".join(names)
    pointers = [f"p{i}" for i in range(len(tensors))]
    ored = " | ".join(pointers) or "0"
    per_call = ", ".join(pointers + [names[s] for s in scalars])
    repin = f"repin(({listed}{',' if count == 1 else ''}))"
    body = [
        f"def launch({listed}{', ' if count else ''}*extra):",
        "    if extra:  # another form of call (constexprs by position): the hot path",
        f"        return repin(({listed}{',' if count else ''} *extra))",
        *(f"    {p} = {reads.pointer_read.format(names[t])}" for p, t in zip(pointers, tensors)),
        "    plan = pinned[0]",
        f"    if ({ored}) & 15 != plan[1] or pinned[1] != generation[0]:",
        f"        return {repin}",
        *_after_plan(pairs, reads, [names[t] for t in tensors], repin),
    ]
    if multi_device:  # another current device: the hot path switches
        body += ["    if plan[4] != current_device():", f"        return {repin}"]
    body.append(f"    return plan[3](stream(plan[4]), {per_call})")
    return "\n".join(body) + "\n"
