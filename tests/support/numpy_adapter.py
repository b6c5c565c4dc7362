"""A framework adapter for numpy arrays, written against the public plugin contract only.

It proves the contract (``docs/adapters.md`` walks through it): everything
here comes from public modules of nt-core (``ninetoothed.runtime.adapter``,
``.hookspecs``, ``.plugins``, ``ninetoothed.arrangement.dtype``,
``ninetoothed.library.ops``) and from ``nt_triton``'s public names, and the
import-boundary test (``tests/test_import_boundary.py``) holds it to that.

numpy arrays live in host memory, so kernels run on them under Triton's
interpreter only (``TRITON_INTERPRET=1``); a call without it is refused with
the template's clear error.  The interpreter takes torch tensors: each array
reaches it zero-copy through DLPack, the interop the Paddle adapter uses
(:func:`nt_triton.dlpack_views`), so the kernel's writes land in the caller's
arrays; an array DLPack cannot share (read-only, say) goes through a copy,
written back if the kernel writes it.

This module is the plugin (its hook is :data:`ninetoothed_framework_adapter`;
an installed adapter names its plugin module in the ``ninetoothed``
entry-point group, this one is registered by hand with
:func:`ninetoothed.runtime.plugins.register`); :func:`ops_module` binds the
kernel library's ops to numpy.  numpy has no autodiff, so the adapter binds
none (``functional`` and ``differentiable`` refuse arrays, naming it).
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from ninetoothed.arrangement.dtype import name_of
from ninetoothed.errors import LaunchError
from ninetoothed.library.ops import InPlace, install
from ninetoothed.runtime.adapter import Adapter
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import GeneratedKernel, TensorInfo, hookimpl
from ninetoothed.runtime.plugins import lazy_adapter_hook
from nt_triton import dlpack_views, torch_module

__all__ = ["NumpyAdapter", "NumpyFramework", "ninetoothed_framework_adapter", "ops_module"]


class NumpyAdapter(Adapter):
    """Adapter for ``numpy.ndarray`` (a ``FrameworkAdapter``), interpreter only."""

    name = "numpy"
    distribution = "the numpy test adapter"
    tensor_types = (np.ndarray,)
    gpu_hint = "numpy arrays live in host memory: convert them to a GPU framework's tensors"

    def describe(self, obj: Any) -> TensorInfo:
        """Shape, strides in elements (numpy counts bytes), dtype name, ``"cpu"``, address.

        Strides that are negative or not whole elements are refused: the
        interpreter's torch tensors cannot view such memory.
        """
        itemsize = obj.itemsize
        if any(stride < 0 or stride % itemsize for stride in obj.strides):
            raise LaunchError(
                f"numpy array of shape {obj.shape} has strides {obj.strides} (bytes): kernels "
                f"take non-negative multiples of the item size ({itemsize}); pass a copy "
                "(numpy.array(a))"
            )
        return TensorInfo(
            shape=tuple(obj.shape),
            strides=tuple(stride // itemsize for stride in obj.strides),
            dtype=name_of(obj.dtype.newbyteorder("=")),  # a byte order is no element type
            device="cpu",
            data_ptr=obj.__array_interface__["data"][0],
        )

    def placeholder(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        """Zeros, for a parameter the call leaves unused."""
        return np.zeros(shape, dtype=dtype)

    def launch_interpreted(self, kernel: GeneratedKernel, bound: BoundCall) -> None:
        """Hand the arrays to Triton's interpreter as torch views (DLPack), then launch."""
        torch = torch_module("the numpy test adapter", "running kernels on numpy arrays")
        names = [parameter.name for parameter in kernel.spec.tensor_parameters]
        for name, array in zip(names, bound.tensor_arguments):
            if name in kernel.outputs and not array.flags.writeable:
                raise LaunchError(
                    f"{kernel.spec.name}: parameter {name!r} is written by the kernel, but its "
                    "numpy array is read-only"
                )
        handed = dlpack_views(
            torch,
            names,
            bound.tensors,
            bound.tensor_arguments,
            # What DLPack cannot share (read-only, another byte order) runs on a copy.
            clone=lambda array: np.ascontiguousarray(array, array.dtype.newbyteorder("=")),
            kernel_name=kernel.spec.name,
            framework=self.name,
        )
        kernel.launch(kernel.prepare(handed.tensors, handed.arguments, bound.scalars), 0)
        for staged in handed.staged:
            if staged.parameter in kernel.outputs:
                staged.original[...] = staged.converted.numpy()


ninetoothed_framework_adapter = hookimpl(lazy_adapter_hook(("numpy",), NumpyAdapter))
"""The plugin's one hook: the adapter, for numpy arrays (this module is the plugin)."""


class NumpyFramework(InPlace):
    """The kernel library's hook for numpy: kernels write into outputs ``numpy.empty`` made."""

    name = "numpy"

    def __init__(self) -> None:
        self._adapter = NumpyAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of an array."""
        return self._adapter.describe(tensor)

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """``numpy.empty`` of ``shape`` with ``like``'s dtype (or ``dtype``)."""
        return np.empty(tuple(shape), dtype=dtype or like.dtype)

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``tensor.reshape(shape)`` (a view of a contiguous array)."""
        return tensor.reshape(tuple(shape))


def ops_module() -> types.ModuleType:
    """A module holding the kernel library's ops bound to numpy (``ops.mm(a, b)``)."""
    module = types.ModuleType("numpy_ops", "The kernel library's ops on numpy arrays.")
    module.__all__ = install(vars(module), NumpyFramework())  # type: ignore[attr-defined]
    return module
