"""Whether PyTorch traces or transforms the current call: :func:`traced`.

The adapter routes such calls through a custom operator, and the fast path
sends them to its miss path; both ask here, so that neither imports the other.
"""

from __future__ import annotations

import torch

__all__ = ["is_compiling", "traced"]

is_compiling = torch.compiler.is_compiling
"""``torch.compiler.is_compiling``, bound once (a global lookup per call)."""

_transforms_active = torch._C._are_functorch_transforms_active
_included = torch._C._dispatch_tls_is_dispatch_key_included
_PYTHON = torch._C.DispatchKey.Python


def traced() -> bool:
    """Dynamo tracing, a ``torch.func`` transform or a dispatch mode active: calls must
    go through the custom operator (Dynamo sees ``is_compiling`` as true and drops
    the branch from compiled code).

    A dispatch mode (one C call: the Python key in this thread's included set)
    is fake tensors, ``make_fx``'s proxies or a user's ``TorchDispatchMode``:
    each must see the op's operator, not a launch it cannot follow.  Dynamo runs
    an op it keeps as one call (``allow_in_graph``) on fake tensors to learn its
    outputs, and PyTorch 2.11 does so with ``is_compiling`` false: an eager launch would read
    the fakes' data pointers; ``make_fx(tracing_mode="real")`` would record a
    graph without the op."""
    return bool(is_compiling() or _transforms_active() or _included(_PYTHON))
