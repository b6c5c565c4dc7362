"""Where a tuning's time goes: the spans of its phases, recorded when asked.

A benchmark (or a person chasing a slow first call) calls :func:`record`; from
then on the tuner notes each phase as a span (name, start, end, on
``time.perf_counter``): waiting for the other ranks to agree, starting the
compile workers, each worker's compile (as the worker timed it, ending when
its answer arrived), each load in this process, the first runs, the two
phases of measuring, and the collectives.  :func:`summary` folds the spans
into one line per name: when the first began and the last ended (seconds
after an origin, such as the call's start), their total, count and longest.
Nothing is recorded, and nothing costs more than one check, until
:func:`record` is called.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["Span", "add", "record", "span", "summary"]

Span = tuple[str, float, float]
"""``(name, start, end)`` in ``time.perf_counter`` seconds."""

_RECORDING: list[list[Span]] = []
"""The list spans go to (empty: not recording)."""


def record() -> list[Span]:
    """Start recording this process's tuning spans; returns the list they go to."""
    spans: list[Span] = []
    _RECORDING[:] = [spans]
    return spans


@contextlib.contextmanager
def span(name: str) -> Iterator[None]:
    """Record the time the ``with`` block takes as one span named ``name``."""
    if not _RECORDING:
        yield
        return
    began = time.perf_counter()
    try:
        yield
    finally:
        _RECORDING[0].append((name, began, time.perf_counter()))


def add(name: str, seconds: float) -> None:
    """Record a span of ``seconds`` that ends now (timed elsewhere: a compile worker's)."""
    if _RECORDING:
        now = time.perf_counter()
        _RECORDING[0].append((name, now - max(0.0, seconds), now))


def summary(spans: list[Span], origin: float) -> dict[str, dict[str, Any]]:
    """Per name, in order of first start: ``first`` (when the first began, seconds after
    ``origin``), ``last`` (when the last ended), ``seconds`` (their total), ``count``
    and ``longest``, rounded to milliseconds."""
    folded: dict[str, dict[str, Any]] = {}
    for name, start, end in sorted(spans, key=lambda one: one[1]):
        entry = folded.setdefault(
            name, {"first": start - origin, "last": 0.0, "seconds": 0.0, "count": 0, "longest": 0.0}
        )
        entry["last"] = max(entry["last"], end - origin)
        entry["seconds"] += end - start
        entry["count"] += 1
        entry["longest"] = max(entry["longest"], end - start)
    return {
        name: {k: round(v, 3) if isinstance(v, float) else v for k, v in entry.items()}
        for name, entry in folded.items()
    }
