"""The ``torch`` entry point: registers the PyTorch framework adapter.

Loading this module must stay cheap and must not import PyTorch: ``ninetoothed``
loads every installed adapter plugin, and most programs use one framework.
The adapter, and with it PyTorch, is imported only when an argument's type comes
from PyTorch (or subclasses one of its types).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ninetoothed.hookspecs import hookimpl
from ninetoothed.plugins import type_comes_from

if TYPE_CHECKING:
    from nt_torch.adapter import TorchAdapter

FRAMEWORK_MODULES: tuple[str, ...] = ("torch",)
"""Top-level modules that define PyTorch's array types."""


@functools.cache
def _adapter() -> TorchAdapter:
    """The process-wide adapter, created on first use."""
    from nt_torch.adapter import TorchAdapter

    return TorchAdapter()


@hookimpl
def ninetoothed_framework_adapter(obj: object) -> TorchAdapter | None:
    """Return the PyTorch adapter if it recognises ``obj``, else ``None``."""
    # Look at the type's module before importing anything, so that objects of
    # other frameworks never pay for importing PyTorch.
    if not type_comes_from(obj, FRAMEWORK_MODULES):
        return None
    adapter = _adapter()
    return adapter if adapter.recognizes(obj) else None
