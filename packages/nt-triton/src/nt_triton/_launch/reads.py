"""What a framework's adapter tells the fast path: :class:`HostReads`.

The fast path (:mod:`.launcher`) is generated per kernel and framework; the
framework's part is how to read one of its tensors (its pointer, the facts
that key a plan), which device and stream are current, and what tuning needs
(a timer, snapshots).  nt-torch and nt-paddle each build one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["HostReads", "reader"]


@dataclass(frozen=True)
class HostReads:
    """What a framework's fast path reads and asks, given by its adapter.

    The ``*_read`` strings are attribute reads on one tensor, ``{}`` standing
    for it (``"{}.data_ptr()"``); nt-triton composes them into the generated
    function.
    """

    pointer_read: str
    """The tensor's device address (an int)."""

    key_reads: tuple[str, ...]
    """Hashable facts that, with alignment, fix the plan: shape, strides, dtype, device."""

    device_of: Callable[[Any], int]
    """The CUDA device index of a tensor (on a miss)."""

    raw_stream: Callable[[int], int]
    """The framework's current stream on a device, as a raw handle (the capture stream
    while a CUDA graph is captured)."""

    current_device: Callable[[], int] | None
    """The current CUDA device; None where the process sees one GPU (nothing to check)."""

    device_guard: Callable[[int], contextlib.AbstractContextManager[Any]]
    """A context making a device current (to load a module on it, or launch on it)."""

    guard: Callable[[Sequence[Any]], Callable[..., bool]] | None = None
    """Builds, for a call's tensors, a check that other tensors match them (dtype,
    device, shape, strides); None: the dict lookup alone."""

    capturing: Callable[[], bool] = lambda: False
    """Whether the current stream is capturing a CUDA graph (then a miss may not
    compile or tune)."""

    device_name: Callable[[int], str] = lambda index: f"cuda:{index}"
    """The device's name (tuning results are kept per device name)."""

    traced: Callable[[], bool] | None = None
    """True while the framework traces or transforms calls (``torch.compile``,
    ``torch.func``): such calls take the miss path, where the adapter routes
    them (a custom operator); None: never."""

    miss_when: tuple[Callable[[], bool], str] | None = None
    """``(mode, read)``: while ``mode()`` is true, a call where ``read`` (on one tensor,
    ``{}`` standing for it) is true of any tensor goes to the miss path whatever its
    plan (PyTorch: grad mode on and a tensor that requires grad, which the adapter
    refuses; under ``no_grad`` the same tensors launch from their plan)."""

    timer: Callable[[Callable[[], None], int], list[float]] | None = None
    """``timer(run, count)``: milliseconds of each of ``count`` runs on the device
    (tuning measures with it)."""

    snapshot: Callable[[Any], Callable[[], None]] | None = None
    """Copies a tensor; returns the function that copies it back (tuning restores
    what its runs overwrite)."""


def reader(read: str) -> Callable[[Any], Any]:
    """A function applying one of :class:`HostReads`'s reads (``{}`` the tensor)."""
    namespace: dict[str, Any] = {}
    exec(compile(f"def read(t):\n    return {read.format('t')}\n", "<read>", "exec"), namespace)  # noqa: S102
    function: Callable[[Any], Any] = namespace["read"]
    return function
