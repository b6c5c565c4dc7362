"""The PyTorch adapter satisfies the core's ``FrameworkAdapter`` contract.

Checked at run time (``runtime_checkable``) and statically (``nox -s lint``
runs mypy on this file).
"""

from __future__ import annotations

import torch

import nt_torch
from ninetoothed.library.ops import OPERATIONS
from ninetoothed.runtime.adapter import Adapter
from ninetoothed.runtime.hookspecs import FrameworkAdapter
from nt_torch.adapter import TorchAdapter


def statically(adapter: TorchAdapter) -> FrameworkAdapter:
    """Never called: mypy checks that the adapter types as a FrameworkAdapter."""
    return adapter


def test_adapter_is_a_framework_adapter() -> None:
    adapter = TorchAdapter()
    assert isinstance(adapter, FrameworkAdapter)
    assert isinstance(adapter, Adapter)


def ops_statically(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Never called: mypy sees ``nt_torch.ops`` as an attribute of the package, and each op's
    parameters and types (``ops.pyi``), through a plain ``import nt_torch``."""
    normalised, _ = nt_torch.ops.fused_add_rms_norm(a, b, a, eps=1e-5)
    return nt_torch.ops.addmm(normalised, a, b, beta=0.5)


def test_ops_are_an_attribute_of_the_package() -> None:
    """``import nt_torch; nt_torch.ops.mm`` works: the package imports its ops on first access."""
    assert nt_torch.ops.mm.__module__ == "nt_torch.ops"
    assert sorted(nt_torch.ops.__all__) == sorted(OPERATIONS)
