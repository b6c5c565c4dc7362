"""What a custom operator's implementation runs per call: the eager fast path.

Under ``torch.compile`` a kernel call is a node of ``ninetoothed::launch``
(:mod:`nt_torch.launch_operator`) or of an operator registered with
:func:`nt_torch.custom_op`, and the compiled graph calls the operator's
implementation every time it runs.  :func:`launcher` gives that
implementation the launch an eager call gets on the GPU: the hot function of
the kernel's :class:`~ninetoothed.runtime.hookspecs.FastPath`, over the same
plans as the kernel's eager calls, keyed on the tensors' shapes, strides, dtypes and
devices.  A call it has a plan for reads the pointers and launches; a call it
has none for (a first call, new shapes, wrong arguments) takes the adapter's
full path, :meth:`~nt_torch.adapter.TorchAdapter.launch_eagerly` (validation,
clear errors, tuning, a new plan).  On Hopper, the library's attention forward
and ``scaled_mm`` may take a Gluon kernel instead, per call, as eager calls do
(:func:`nt_torch.hand_written.substitute`).  Under Triton's interpreter, or where the
backend has no fast path, every call takes the full path.

The hot function does not ask whether a compiler traces: the implementation
runs the launch the trace recorded, so a call never goes back to the
operator.  Nothing in it synchronises or allocates (the stream is PyTorch's
current one, the capture stream while a CUDA graph is captured).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from ninetoothed.runtime.hookspecs import FastPath, GeneratedKernel
from nt_torch import hand_written

__all__ = ["launcher", "reorder"]

Launch = Callable[..., None]
"""``launch(*args, **kwargs)``: the kernel's arguments in parameter order."""


def launcher(adapter: Any, kernel: GeneratedKernel) -> Launch:
    """The launch of ``kernel``'s calls from an operator: the fast path where there is one."""

    def validated(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        adapter.launch_eagerly(kernel, args, kwargs)

    fast: FastPath | None = None if kernel.interpreting else adapter.launcher(kernel)
    if fast is not None:
        # Kept per kernel for all its calls: the Gluon launch is bound per signature.
        return hand_written.substitute(kernel, fast.hot(validated), bound="signature")

    def eager(*args: Any, **kwargs: Any) -> None:
        validated(args, kwargs)

    return hand_written.substitute(kernel, eager, bound="signature")


def reorder(positions: Sequence[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function taking a sequence to the tuple of its items at ``positions`` (C speed)."""
    indices = tuple(positions)
    if not indices:
        return lambda items: ()
    if len(indices) == 1:
        (only,) = indices
        return lambda items: (items[only],)
    getter: Callable[[Sequence[Any]], tuple[Any, ...]] = operator.itemgetter(*indices)
    return getter
