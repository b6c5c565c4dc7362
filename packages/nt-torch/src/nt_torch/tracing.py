"""Whether PyTorch traces or transforms the current call: :func:`traced`.

The adapter routes such calls through a custom operator, and the fast path
sends them to its miss path; both ask here, so that neither imports the other.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["TRACING_CHECKS", "is_compiling", "traced"]

is_compiling = torch.compiler.is_compiling
"""``torch.compiler.is_compiling``, bound once (a global lookup per call)."""

_transforms_active = torch._C._are_functorch_transforms_active
# The number of dispatch modes active in this thread (user modes and the fake,
# proxy and functional ones).  Nonzero exactly where the Python dispatch key is in
# the thread's included set: pushing the first mode includes it, popping the last
# one (as a mode's own handler does) removes it; tests/test_tracing.py in nt-torch
# holds the two to agreeing.  A plain C function, where the key test is a pybind11
# call with an enum argument: 28 ns against 58 on a CI machine, and the express
# lane makes this call on every call it serves.
_dispatch_modes = torch._C._len_torch_dispatch_stack


def traced() -> bool:
    """Dynamo tracing, a ``torch.func`` transform or a dispatch mode active: calls must
    go through the custom operator (Dynamo sees ``is_compiling`` as true and drops
    the branch from compiled code).

    A dispatch mode (one C call: the length of this thread's mode stack) is fake
    tensors, ``make_fx``'s proxies or a user's ``TorchDispatchMode``:
    each must see the op's operator, not a launch it cannot follow.  Dynamo runs
    an op it keeps as one call (``allow_in_graph``) on fake tensors to learn its
    outputs, and PyTorch 2.11 does so with ``is_compiling`` false: an eager launch would read
    the fakes' data pointers; ``make_fx(tracing_mode="real")`` would record a
    graph without the op."""
    return bool(is_compiling() or _transforms_active() or _dispatch_modes())


def _compiling_check() -> tuple[Any, tuple[Any, ...]]:
    """``is_compiling``'s answer as a call C can make without running Python.

    PyTorch's ``is_compiling`` returns ``torch.compiler._is_compiling_flag`` outside
    TorchScript (whose functions never run this Python): two Python frames per call
    where a ``getattr`` of the flag is one C call.  The flag is read directly only
    where the function reads nothing else; any other ``is_compiling`` is called."""
    flag = "_is_compiling_flag"
    names = set(getattr(getattr(is_compiling, "__code__", None), "co_names", ()))
    if flag in names and names <= {"torch", "jit", "is_scripting", flag}:
        return (getattr, (torch.compiler, flag))
    return (is_compiling, ())


TRACING_CHECKS: tuple[tuple[Any, tuple[Any, ...]], ...] = (
    _compiling_check(),
    (_transforms_active, ()),
    (_dispatch_modes, ()),
)
""":func:`traced`'s checks as ``(function, arguments)`` pairs, each true when tracing:
the express lane (``_express.c``) calls them from C."""
