"""The ``jax`` entry point: registers the JAX framework adapter.

``ninetoothed`` loads every installed adapter plugin, so this module stays
cheap: JAX is imported only when an argument's type comes from it.
"""

from ninetoothed.runtime.hookspecs import hookimpl
from ninetoothed.runtime.plugins import lazy_adapter_hook

ninetoothed_framework_adapter = hookimpl(
    lazy_adapter_hook(("jax", "jaxlib"), "nt_jax.adapter:JaxAdapter")
)
"""Return the JAX adapter if it recognises an object, else ``None``."""
