"""What the fast path needs of a kernel: :class:`LaunchTarget`.

The fast path launches :class:`nt_triton._kernel.TritonKernel` s, which
create it; it knows them only through this protocol, so that neither module
imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ninetoothed.runtime.aliasing import Aliasing
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton._abi import KernelSignature
from nt_triton._host import HostFunction
from nt_triton.tuner._core import Tuner

__all__ = ["LaunchTarget"]


class LaunchTarget(Protocol):
    """A generated kernel, as the fast path launches it."""

    @property
    def spec(self) -> KernelSpec:
        """The kernel's spec (its call checks, name, parameters, application)."""

    @property
    def signature(self) -> KernelSignature:
        """The generated kernel's parameters, in order."""

    @property
    def prepare(self) -> HostFunction:
        """The per-call host function (arguments, grid, pinned meta values)."""

    @property
    def launch_options(self) -> tuple[int, int]:
        """``(num_warps, num_stages)`` of launches with pinned meta values."""

    @property
    def tuner(self) -> Tuner:
        """Chooses the kernel's configuration per call."""

    @property
    def source_path(self) -> str:
        """The generated source's file (compile workers load it)."""

    @property
    def function(self) -> Any:
        """The ``@triton.jit`` function."""

    @property
    def injected(self) -> Mapping[str, Any]:
        """Objects the kernel module refers to (then compile workers cannot load it)."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """Tensor parameters the kernel reads."""

    @property
    def outputs(self) -> tuple[str, ...]:
        """Tensor parameters the kernel writes."""

    @property
    def aliasing(self) -> Aliasing:
        """Which arguments may not share memory with what the kernel writes."""
