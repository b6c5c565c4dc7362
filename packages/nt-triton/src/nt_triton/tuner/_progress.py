"""A one-line tuning progress display on stderr.

Shown when stderr is a terminal, or when ``NINETOOTHED_TUNING_PROGRESS=1``
(``0`` silences it); off by default in non-interactive runs.  Redrawn at most
every 100 ms: which configuration of how many is being compiled or measured,
how many were pruned, the best so far; then one summary line.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from nt_triton import knobs

__all__ = ["Progress"]


class Progress:
    """Progress of one tuning run."""

    def __init__(self, title: str, total: int, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = knobs.tuning_progress(self.stream)
        self.title = title
        self.total = total
        self.compiled = 0
        self.measured = 0
        self.pruned = 0
        self.best = ""
        self._drawn = 0.0
        self._began = time.perf_counter()

    def update(self, *, force: bool = False, **counts: int | str) -> None:
        """Record new counts (``compiled=``, ``measured=``, ``pruned=``, ``best=``) and redraw."""
        for name, value in counts.items():
            setattr(self, name, value)
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        line = (
            f"\r[ninetoothed] tuning {self.title}: compiled {self.compiled}/{self.total}, "
            f"measured {self.measured}, pruned {self.pruned}"
            + (f", best {self.best}" if self.best else "")
        )
        self.stream.write(line[:200] + "\033[K")
        self.stream.flush()

    def done(self, summary: str) -> None:
        """The summary line (replaces the progress line)."""
        if not self.enabled:
            return
        seconds = time.perf_counter() - self._began
        self.stream.write(
            f"\r[ninetoothed] tuned {self.title} in {seconds:.1f} s: {summary}\033[K\n"
        )
        self.stream.flush()
