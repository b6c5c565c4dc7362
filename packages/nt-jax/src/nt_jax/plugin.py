"""The ``jax`` entry point: registers the JAX framework adapter.

Loading this module must stay cheap and must not import JAX: ``ninetoothed``
loads every installed adapter plugin, and most programs use one framework.
The adapter, and with it JAX, is imported only when an argument's type comes
from JAX (or subclasses one of its types).
"""

from __future__ import annotations

from ninetoothed.hookspecs import FrameworkAdapter, hookimpl
from ninetoothed.plugins import lazy_adapter_hook

FRAMEWORK_MODULES: tuple[str, ...] = ("jax", "jaxlib")
"""Top-level modules that define JAX's array types."""


def _load() -> FrameworkAdapter:
    """Create the adapter; this is where JAX gets imported."""
    from nt_jax.adapter import JaxAdapter

    return JaxAdapter()


ninetoothed_framework_adapter = hookimpl(lazy_adapter_hook(FRAMEWORK_MODULES, _load))
"""Return the JAX adapter if it recognises an object, else ``None``."""
