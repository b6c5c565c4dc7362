"""The library ops' express lane: a repeated call's plan reached in C (``_express.c``).

A repeated call of ``nt_torch.ops.add`` passes four Python layers before its
recorded plan (:mod:`ninetoothed.library.ops._memo`): the graph-call wrapper,
the gradient check, the memo's tracing check and its key.  On an H100 host
they cost more than the launch.  Once the memo makes a plan with a guard it
tells the op (:attr:`~ninetoothed.library.ops._memo.Memo.planned`), and the
op arms its *lane*, a C object that repeats those layers' answers for the
op's four most recent signatures; everything else takes the Python path as
before.  The first lane also makes the extension's ``dispatch`` the ops'
``__call__`` (``nt_torch.ops._GraphCall``), so a call reaches its lane with no
Python frame.

The extension needs only a C compiler and Python's headers.  It is built
once per process in the background (:func:`start`, on an op's first call),
with Triton's helper into Triton's cache, like the lean launcher; the first
plan waits for it.  Set ``NINETOOTHED_EXPRESS=off`` to keep every call on the
Python path; where it cannot be built, calls keep it too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ninetoothed.runtime.once import Once
from nt_torch import _native
from nt_torch._optional import optional, switched_on

__all__ = ["KNOB", "NAME", "SOURCES", "allocation", "build", "enabled", "extension", "start"]

NAME = "ninetoothed_torch_express"
"""The extension module's name (its ``PyInit_`` function's)."""

SOURCES = tuple(
    Path(__file__).with_name(name)
    for name in ("_express.c", "_express_allocate.c", "_express_dispatch.c")
)
"""The extension's C source, in files compiled as one (each uses the ones before it)."""

KNOB = "NINETOOTHED_EXPRESS"
"""``off`` (or ``0``, ``false``, ``no``): no express lane, every call takes the Python
path (read when the extension would be built)."""

_lock = threading.Lock()
_builder: list[threading.Thread] = []


def enabled() -> bool:
    """Whether the lane may serve calls (:data:`KNOB`)."""
    return switched_on(KNOB)


def build() -> Any:
    """Build (or find in Triton's cache) and import the extension."""
    from triton.runtime.build import compile_module_from_src

    return compile_module_from_src(src="\n".join(p.read_text() for p in SOURCES), name=NAME)


def start() -> None:
    """Begin building the extension in the background, once per process.

    Triton's build helper is imported here, in the caller's thread: a module that two
    threads import at once may be seen half made by one of them (``triton.runtime``
    missing from a ``triton`` still importing), and the op calling this imports
    Triton next anyway."""
    if extension.values or _builder:
        return
    if not enabled():
        extension.offer(None)  # decided: later calls return at the first test
        return
    with _lock:
        if not extension.values and not _builder:
            import triton.runtime.build  # noqa: F401 - imported whole before the thread

            thread = threading.Thread(target=_build, name="nt-express-build", daemon=True)
            _builder.append(thread)
            thread.start()


def _build() -> None:
    """The background build: the lane's extension, then (slower: C++ against PyTorch)
    the native allocation, which every plan's ``Allocate`` takes once built."""
    module = extension()
    if module is not None:
        _native.install(module)


def allocation(like: Any, sizes: tuple[int, ...], fallback: Any) -> Any:
    """A plan's allocation of a tensor of ``sizes`` like ``like`` (an empty template):
    the extension's ``Allocate``, which calls the native allocation once it is built
    and ``fallback()`` until then; ``fallback`` itself where there is no extension or
    the native allocation cannot be had.  Waits for the extension's build, as the
    first plan's lane does."""
    module = extension()
    if module is None or _native.extension.values == [None]:
        return fallback
    return module.Allocate(like, sizes, fallback)


extension: Once[Any | None] = optional(KNOB, lambda: build(), "calls take the Python path")
"""``extension()``: the extension, built on first use (waiting for :func:`start`'s build);
None where it is off or cannot be built."""
