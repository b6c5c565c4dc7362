"""The PaddlePaddle adapter satisfies the core's ``FrameworkAdapter`` contract.

Checked at run time (``runtime_checkable``) and statically (``nox -s lint``
runs mypy on this file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import nt_paddle
from ninetoothed.library.ops import OPERATIONS
from ninetoothed.runtime.adapter import Adapter
from ninetoothed.runtime.hookspecs import FrameworkAdapter

pytest.importorskip("paddle", reason="paddle is not installed here")

from nt_paddle.adapter import PaddleAdapter  # noqa: E402

if TYPE_CHECKING:
    import paddle


def statically(adapter: PaddleAdapter) -> FrameworkAdapter:
    """Never called: mypy checks that the adapter types as a FrameworkAdapter."""
    return adapter


def test_adapter_is_a_framework_adapter() -> None:
    adapter = PaddleAdapter()
    assert isinstance(adapter, FrameworkAdapter)
    assert isinstance(adapter, Adapter)


def ops_statically(a: paddle.Tensor, b: paddle.Tensor) -> paddle.Tensor:
    """Never called: mypy sees ``nt_paddle.ops`` as an attribute of the package, and each op's
    parameters and types (``ops.pyi``), through a plain ``import nt_paddle``."""
    normalised, _ = nt_paddle.ops.fused_add_rms_norm(a, b, a, eps=1e-5)
    return nt_paddle.ops.addmm(normalised, a, b, beta=0.5)


def test_ops_are_an_attribute_of_the_package() -> None:
    """``import nt_paddle; nt_paddle.ops.mm`` works: the package imports its ops on first access."""
    assert nt_paddle.ops.mm.__module__ == "nt_paddle.ops"
    assert sorted(nt_paddle.ops.__all__) == sorted(OPERATIONS)
