"""Kernels under ``paddle.jit.to_static``: they run in dynamic mode, or fail clearly.

``to_static`` turns a function into a Paddle program.  A NineToothed launch
needs concrete tensors (data pointers, strides, shapes) and is not a Paddle
operator, so it cannot be an instruction of that program; hosting it would
take a C++ custom operator (``paddle.utils.cpp_extension``) per kernel.

Paddle's default translator, SOT, simulates the function's bytecode and
follows every call into ours.  It cannot simulate the adapter lookup (a
pluggy hook call), and where it splits our functions into resumed pieces
(the library ops' tensor descriptions) the pieces fail.  So every entry
point (a kernel's call, a functional or differentiable kernel's call, a
library op, and on the GPU a warm kernel's fast path: the adapter's
``guards_fast_path``) first calls the plugins' call guard
(:data:`ninetoothed.runtime.plugins.call_guard`), and nt-paddle's is :func:`call_guard`:
SOT's own ``psdb.fallback(recursive=True)``.  Called for real it does
nothing; simulated, it makes SOT stop there.  Inside the ``to_static``
function SOT breaks the graph at the call of the kernel or op and calls it
for real; translating that call on its own, SOT meets ``psdb.fallback`` in
its first instruction and runs it, and everything it calls, in dynamic mode
(no simulation, no resumed pieces).  The rest of the function is still
translated.  Results equal dynamic mode's, first call included (checked in
the tests).  A raise would not do: SOT (Python 3.11 and later) falls back at
a simulated ``raise`` by splitting every frame above it, and then simulates
the rest of each of them on its own, the adapter lookup included.

With ``full_graph=True`` the kernel gets symbolic values
(``paddle.pir.Value``) that no adapter recognises, and the call fails with
:class:`~ninetoothed.errors.AdapterNotFoundError` naming that type.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import paddle
from paddle.jit.sot import psdb

from ninetoothed.errors import LaunchError

__all__ = ["call_guard", "refuse_static_graph"]


_GUARD: Callable[[], None] = functools.partial(psdb.fallback, True)


def call_guard() -> Callable[[], None]:
    """nt-paddle's call guard: ``psdb.fallback(recursive=True)``, which SOT recognises.

    The entry point must call this object itself (SOT matches
    ``psdb.fallback`` by identity, and a ``functools.partial`` adds no
    frame), so the core calls the guard directly when it is the only one.
    Always the same object: the guard is asked again whenever a kernel is
    made, and Dynamo, which traces it, recompiles when a global it read
    changes.
    """
    return _GUARD


def refuse_static_graph(kernel_name: str) -> None:
    """Raise if Paddle is simulating (SOT) or building a static program.

    The adapter's check, for calls that reach it without the call guard
    (the GPU fast path sends the calls it has no plan for to the adapter).
    """
    if psdb.in_sot() or not paddle.in_dynamic_mode():
        raise LaunchError(
            f"{kernel_name}: NineToothed kernels cannot run inside paddle.jit.to_static (or a "
            "paddle.static program): a launch needs concrete tensors and is not a Paddle "
            "operator. Call the kernel in dynamic mode, outside the to_static function "
            "(e.g. split the function so that the kernel call stays in dynamic mode)"
        )
