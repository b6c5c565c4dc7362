"""The ``paddle`` entry point: registers the PaddlePaddle framework adapter.

Loading this module must stay cheap and must not import PaddlePaddle: ``ninetoothed``
loads every installed adapter plugin, and most programs use one framework.
The adapter, and with it PaddlePaddle, is imported only when an argument's type comes
from PaddlePaddle (or subclasses one of its types).
"""

from __future__ import annotations

from ninetoothed.hookspecs import FrameworkAdapter, hookimpl
from ninetoothed.plugins import lazy_adapter_hook

FRAMEWORK_MODULES: tuple[str, ...] = ("paddle",)
"""Top-level modules that define PaddlePaddle's tensor types."""


def _load() -> FrameworkAdapter:
    """Create the adapter; this is where PaddlePaddle gets imported."""
    from nt_paddle.adapter import PaddleAdapter

    return PaddleAdapter()


ninetoothed_framework_adapter = hookimpl(lazy_adapter_hook(FRAMEWORK_MODULES, _load))
"""Return the PaddlePaddle adapter if it recognises an object, else ``None``."""
