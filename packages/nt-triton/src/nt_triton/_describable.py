"""The host's test of whether a call may copy a tensor's tiles through tensor descriptors.

Generated persistent programs load and store tiles that are boxes of their source
through tensor descriptors where the host's flag for that tensor says so
(:mod:`nt_triton._codegen.descriptors`).  A descriptor (a TMA map) needs:

* the innermost stride 1, every other stride a positive multiple of 16 bytes, and
  the address 16-byte aligned (what the copy engine addresses);
* an element type of 1 to 8 bytes that is not ``bool``;
* a GPU with the copy engine (compute capability 9.0 on), or Triton's interpreter;
* a launch that gives the kernel scratch memory to write the descriptors to: ours
  do (:mod:`nt_triton._launch.scratch`), and they pass pointers as ints.  A launch
  whose pointers are other objects (jax-triton's custom call, Inductor's traced
  calls) does not, and keeps the pointer loads.

``NINETOOTHED_TENSOR_DESCRIPTORS=off`` keeps pointer loads everywhere
(:func:`nt_triton.knobs.tensor_descriptors`).  The test runs when a call's plan is
made, not per call: the plan is kept per shape, strides, dtype and alignment.
"""

from __future__ import annotations

import functools
from typing import Any

from ninetoothed.arrangement.dtype import itemsize
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton import knobs

__all__ = ["describable"]

ALIGNMENT = 16
"""Bytes the address and every stride but the innermost must be a multiple of."""


def describable(tensor: TensorInfo, pointer: Any) -> bool:
    """Whether this call may copy ``tensor``'s tiles through tensor descriptors
    (``pointer``: what the kernel gets for its address)."""
    strides = tensor.strides
    if tensor.dtype == "bool" or not strides or strides[-1] != 1:
        return False
    element = itemsize(tensor.dtype)
    if any(stride <= 0 or stride * element % ALIGNMENT for stride in strides[:-1]):
        return False
    if not knobs.tensor_descriptors():
        return False
    if knobs.interpreting():
        return tensor.data_ptr % ALIGNMENT == 0
    return type(pointer) is int and pointer % ALIGNMENT == 0 and _copy_engine()


@functools.cache
def _copy_engine() -> bool:
    """Whether the current GPU has the tensor memory accelerator (sm_90 on; read once)."""
    from triton.runtime import driver

    target = driver.active.get_current_target()
    return target.backend == "cuda" and int(target.arch) >= 90
