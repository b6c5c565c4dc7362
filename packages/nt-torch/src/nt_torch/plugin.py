"""The ``torch`` entry point: registers the PyTorch framework adapter.

Loading this module must stay cheap and must not import PyTorch: ``ninetoothed``
loads every installed adapter plugin, and most programs use one framework.
The adapter, and with it PyTorch, is imported only when an argument's type comes
from PyTorch (or subclasses one of its types).
"""

from __future__ import annotations

from ninetoothed.hookspecs import FrameworkAdapter, hookimpl
from ninetoothed.plugins import lazy_adapter_hook

FRAMEWORK_MODULES: tuple[str, ...] = ("torch",)
"""Top-level modules that define PyTorch's tensor types."""


def _load() -> FrameworkAdapter:
    """Create the adapter; this is where PyTorch gets imported."""
    from nt_torch.adapter import TorchAdapter

    return TorchAdapter()


ninetoothed_framework_adapter = hookimpl(lazy_adapter_hook(FRAMEWORK_MODULES, _load))
"""Return the PyTorch adapter if it recognises an object, else ``None``."""
