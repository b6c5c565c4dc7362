"""The ``jax`` entry point: registers the JAX framework adapter.

Loading this module must stay cheap and must not import JAX: ``ninetoothed``
loads every installed adapter plugin, and most programs use one framework.
The adapter, and with it JAX, is imported only when an argument's type comes
from JAX (or subclasses one of its types).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ninetoothed.hookspecs import hookimpl
from ninetoothed.plugins import type_comes_from

if TYPE_CHECKING:
    from nt_jax.adapter import JaxAdapter

FRAMEWORK_MODULES: tuple[str, ...] = ("jax", "jaxlib")
"""Top-level modules that define JAX's array types."""


@functools.cache
def _adapter() -> JaxAdapter:
    """The process-wide adapter, created on first use."""
    from nt_jax.adapter import JaxAdapter

    return JaxAdapter()


@hookimpl
def ninetoothed_framework_adapter(obj: object) -> JaxAdapter | None:
    """Return the JAX adapter if it recognises ``obj``, else ``None``."""
    # Look at the type's module before importing anything, so that objects of
    # other frameworks never pay for importing JAX.
    if not type_comes_from(obj, FRAMEWORK_MODULES):
        return None
    adapter = _adapter()
    return adapter if adapter.recognizes(obj) else None
