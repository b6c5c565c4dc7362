"""Knobs, and compiled extensions that calls may do without (each built once, or None).

The express lane's C extension (:mod:`nt_torch._express`) and the native module
(:mod:`nt_torch._native`) each have a knob that turns them off and a build that
may fail (no compiler, another platform).  Either way the Python path serves,
so the reason is logged at debug level, not raised.  :func:`switched_on` also reads
the other on-by-default knobs of nt-torch (``NINETOOTHED_COMPILED_FUSION``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from ninetoothed.runtime.once import Once

__all__ = ["optional", "switched_on"]

_log = logging.getLogger(__name__)


def switched_on(knob: str) -> bool:
    """Whether the environment leaves ``knob`` on: anything but ``off``, ``0``,
    ``false`` or ``no`` (any case), or unset."""
    return os.environ.get(knob, "on").strip().lower() not in ("off", "0", "false", "no")


def optional(knob: str, build: Callable[[], Any], without: str) -> Once[Any | None]:
    """``build()``'s module, made on first use: None where ``knob`` is off or the build
    raises (``without`` says what serves instead, in the debug log)."""

    def load() -> Any | None:
        if not switched_on(knob):
            _log.debug("%s is off: %s", knob, without)
            return None
        try:
            return build()
        except Exception as error:  # noqa: BLE001 - any failure: the Python path serves
            _log.debug("%s unavailable (%s): %s", knob, without, error)
            return None

    return Once(load)
