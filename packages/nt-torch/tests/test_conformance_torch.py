"""The PyTorch adapter satisfies the core's ``FrameworkAdapter`` contract.

Checked at run time (``runtime_checkable``) and statically (``nox -s lint``
runs mypy on this file).
"""

from __future__ import annotations

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
