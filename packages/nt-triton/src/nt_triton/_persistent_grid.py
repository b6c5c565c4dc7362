"""How many programs a persistent kernel launches (``make(..., persistent=True)``).

A persistent program loops over the grid (:mod:`nt_triton._codegen.persistent_loop`),
so the launch needs no more programs than the device runs at once for tiles
that fill a multiprocessor: one per multiprocessor.  Under Triton's interpreter
there is no device; a small cap keeps several grid indices per program, so
tests under the interpreter walk the loop as a GPU does.
"""

from __future__ import annotations

import functools

from nt_triton import knobs
from nt_triton.tuner import _early as early

__all__ = ["INTERPRETER_PROGRAMS", "program_cap"]

INTERPRETER_PROGRAMS = 3
"""Programs a persistent kernel launches under Triton's interpreter."""


def program_cap() -> int:
    """The most programs a persistent kernel launches on the current device."""
    if knobs.interpreting():
        return INTERPRETER_PROGRAMS
    from triton.runtime import driver

    early.driver_settled()
    return _multiprocessors(driver.active.get_current_device())


@functools.cache
def _multiprocessors(device: int) -> int:
    """The multiprocessor count of ``device``, read once per process."""
    from triton.runtime import driver

    properties = driver.active.utils.get_device_properties(device)
    return int(properties["multiprocessor_count"])
