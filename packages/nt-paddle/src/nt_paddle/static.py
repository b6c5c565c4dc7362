"""Kernels under ``paddle.jit.to_static``: a clear error, not an internal one.

``to_static`` turns a function into a Paddle program.  A NineToothed launch
needs concrete tensors (data pointers, strides, shapes) and is not a Paddle
operator, so it cannot be an instruction of that program; hosting it would
take a C++ custom operator (``paddle.utils.cpp_extension``) per kernel.
Paddle's default translator, SOT, simulates the function's bytecode; a
kernel call found while simulating raises here, and SOT then runs that frame
in dynamic mode: under ``to_static`` (default ``full_graph=False``) the kernel
runs eagerly, with results equal to dynamic mode (checked in the tests).
Asking SOT for a graph break (``psdb.breakgraph``) instead did not stop it
from simulating the adapter (Paddle 3.3).  With ``full_graph=True`` the
kernel gets symbolic values (``paddle.pir.Value``) that no adapter recognises,
and the call fails with :class:`~ninetoothed.errors.AdapterNotFoundError`
naming that type.
"""

from __future__ import annotations

import paddle
from paddle.jit.sot import psdb

from ninetoothed.errors import LaunchError

__all__ = ["refuse_static_graph"]


def refuse_static_graph(kernel_name: str) -> None:
    """Raise if Paddle is simulating (SOT) or building a static program."""
    if psdb.in_sot() or not paddle.in_dynamic_mode():
        raise LaunchError(
            f"{kernel_name}: NineToothed kernels cannot run inside paddle.jit.to_static (or a "
            "paddle.static program): a launch needs concrete tensors and is not a Paddle "
            "operator. Call the kernel in dynamic mode, outside the to_static function "
            "(e.g. split the function so that the kernel call stays in dynamic mode)"
        )
