"""The interface every framework helper implements."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
"""Set by ``nox -s gpu``: run kernels on CUDA instead of Triton's interpreter."""


def poison_outputs(monkeypatch: Any, hook: Any, poisoned_like: Callable[..., Any]) -> None:
    """Have the ops' framework ``hook`` allocate with ``poisoned_like(like, shape, dtype)``:
    its ``empty``, and its ``allocation`` (what the memo's plans call) where it has one."""
    monkeypatch.setattr(hook, "empty", poisoned_like)
    if hasattr(hook, "allocation"):

        def allocation(like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
            return functools.partial(poisoned_like, like, shape, dtype)

        monkeypatch.setattr(hook, "allocation", allocation)


def poison_value(dtype: str) -> float | int | bool:
    """What an output is filled with before a kernel writes it: NaN, or an unlikely int."""
    if dtype.startswith(("float", "bfloat")):
        return float("nan")
    if dtype == "bool":
        return True
    return -12345 if not dtype.startswith("uint") else 123


class FrameworkSupport:
    """Converts test data to and from one framework and calls kernels its way."""

    name = "base"

    @property
    def device(self) -> str:
        """``"cuda"`` under ``nox -s gpu``, else ``"cpu"``."""
        return "cuda" if ON_GPU else "cpu"

    def from_numpy(self, array: np.ndarray) -> Any:
        """A tensor of this framework with ``array``'s values, on the test device."""
        raise NotImplementedError

    def to_numpy(self, value: Any) -> np.ndarray:
        """The values of a tensor of this framework."""
        raise NotImplementedError

    def poisoned(self, shape: Sequence[int], dtype: str) -> Any:
        """An output tensor filled with :func:`poison_value`."""
        return self.from_numpy(np.full(shape, poison_value(dtype), dtype=_numpy_dtype(dtype)))

    def non_contiguous(self, array: np.ndarray) -> Any:
        """A tensor with ``array``'s values whose strides are not row-major.

        Built as a transposed copy's transpose (or a stepped slice for 1-D), so
        the kernel must honour strides.  Frameworks without strided views
        (JAX) return an ordinary tensor.
        """
        raise NotImplementedError

    def view(self, base: Any, shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> Any:
        """A view of ``base``'s memory with ``shape``, element ``strides`` and ``offset``
        (``as_strided``); None where the framework has no views (JAX)."""
        return None

    @property
    def ops(self) -> Any:
        """The framework's ops module (``nt_torch.ops`` …): the kernel library."""
        raise NotImplementedError

    def poisoned_like(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """An output of ``shape`` with ``like``'s dtype (or ``dtype``) and device, filled
        with NaN: what
        the library's ops allocate, when a test wants to see every element written."""
        raise NotImplementedError

    def call(
        self, kernel: Any, args: Sequence[Any], kwargs: dict[str, Any], outputs: Sequence[int]
    ) -> list[np.ndarray]:
        """Call ``kernel`` and return the values of the output arguments ``outputs``.

        This is the in-place convention (PyTorch, PaddlePaddle): the kernel
        returns nothing and writes into the tensors passed in.  Functional
        frameworks (JAX) override it.
        """
        result = kernel(*args, **kwargs)
        assert result is None, "in-place kernels return nothing"
        return [self.to_numpy(args[index]) for index in outputs]


def _numpy_dtype(dtype: str) -> Any:
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(dtype)
