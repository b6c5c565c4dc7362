"""The JAX adapter satisfies the core's ``FrameworkAdapter`` contract.

Checked at run time (``runtime_checkable``) and statically (``nox -s lint``
runs mypy on this file).
"""

from __future__ import annotations

import jax

import nt_jax
from ninetoothed.library.ops import OPERATIONS
from ninetoothed.runtime.adapter import Adapter
from ninetoothed.runtime.hookspecs import FrameworkAdapter
from nt_jax.adapter import JaxAdapter


def statically(adapter: JaxAdapter) -> FrameworkAdapter:
    """Never called: mypy checks that the adapter types as a FrameworkAdapter."""
    return adapter


def test_adapter_is_a_framework_adapter() -> None:
    adapter = JaxAdapter()
    assert isinstance(adapter, FrameworkAdapter)
    assert isinstance(adapter, Adapter)


def ops_statically(a: jax.Array, b: jax.Array) -> jax.Array:
    """Never called: mypy sees ``nt_jax.ops`` as an attribute of the package, and each op's
    parameters and types (``ops.pyi``), through a plain ``import nt_jax``."""
    normalised, _ = nt_jax.ops.fused_add_rms_norm(a, b, a, eps=1e-5)
    return nt_jax.ops.addmm(normalised, a, b, beta=0.5)


def test_ops_are_an_attribute_of_the_package() -> None:
    """``import nt_jax; nt_jax.ops.mm`` works: the package imports its ops on first access."""
    assert nt_jax.ops.mm.__module__ == "nt_jax.ops"
    assert sorted(nt_jax.ops.__all__) == sorted(OPERATIONS)
