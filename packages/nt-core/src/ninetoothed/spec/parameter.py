"""A kernel's parameters as the spec records them, and what each call is checked against.

A :class:`Parameter` pairs a name of the application with the tensor given
for it and the tensor the arrangement made of it; a :class:`ParameterCheck`
is what a call's argument for it must satisfy, derived once per kernel
(:attr:`~ninetoothed.spec.kernel_spec.KernelSpec.call_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ninetoothed.arrangement.tensor import Tensor

__all__ = ["Parameter", "ParameterCheck"]


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter: its name in the application, source and arrangement."""

    name: str
    source: Tensor
    arranged: Tensor

    @property
    def is_scalar(self) -> bool:
        """Whether this is a scalar (``Tensor(0)``) parameter."""
        # A Tensor(0) given dimensions by its arrangement (``unsqueeze``) takes a
        # zero-dimensional framework tensor, as upstream's argmin's output does.
        return self.source.ndim == 0 and self.arranged.ndim == 0


@dataclass(frozen=True)
class ParameterCheck:
    """What a call must satisfy for one parameter, derived once per kernel."""

    name: str
    is_scalar: bool
    ndim: int
    fixed_sizes: tuple[tuple[int, int], ...]
    """``(dimension, size)`` for the sizes the tensor declares as literals."""
    dtype: str | None
    """The declared element type's name, if any."""
    fixed_value: Any
    """A scalar's value fixed at ``make`` time (``Tensor(0, value=...)``), else None."""
    jagged_dim: int | None = None
    """The jagged dimension (``Tensor(jagged_dim=...)``: a torch nested tensor), else None."""
    constexpr: bool = False
    """A constexpr scalar (``Tensor(0, constexpr=True)``): its value is compiled in."""
