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
_dispatch_mode = torch._C._get_dispatch_mode
_FAKE = torch._C._TorchDispatchModeKey.FAKE


def traced() -> bool:
    """Dynamo tracing, fake tensors or a ``torch.func`` transform active: calls must
    go through the custom operator (Dynamo sees ``is_compiling`` as true and drops
    the branch from compiled code).

    Fake tensors count on their own: Dynamo runs a ``nonstrict_trace``-d op on
    fake tensors to learn its outputs, and PyTorch 2.11 does so with
    ``is_compiling`` false; an eager launch would read their data pointers."""
    return bool(is_compiling() or _transforms_active() or _dispatch_mode(_FAKE) is not None)
