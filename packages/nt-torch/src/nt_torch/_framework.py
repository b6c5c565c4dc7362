"""The kernel library's hook for PyTorch (:class:`ninetoothed.library.ops.Framework`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ninetoothed.library.ops import InPlace
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_torch import _express, _native, _tensor_info, autograd, hand_written
from nt_torch.adapter import TorchAdapter
from nt_torch.tracing import traced

__all__ = ["TorchFramework"]


class TorchFramework(InPlace):
    """The library's hook for PyTorch: kernels write into outputs made by ``torch.empty``."""

    name = "torch"

    def __init__(self) -> None:
        self._adapter = TorchAdapter()

    def describe(self, tensor: Any) -> TensorInfo:
        """The adapter's description of a ``torch.Tensor``."""
        return self._adapter.describe(tensor)

    @staticmethod
    def float32_products() -> str:
        """``"ieee"`` where PyTorch computes float32 matrix products in float32 (its
        default: ``torch.backends.cuda.matmul.fp32_precision`` unset, and
        ``torch.get_float32_matmul_precision()`` ``"highest"``), else ``"tf32"``."""
        precision = getattr(torch.backends.cuda.matmul, "fp32_precision", "none")
        if precision in ("tf32", "ieee"):
            return str(precision)
        try:
            legacy = torch.get_float32_matmul_precision()
        except RuntimeError:  # both APIs were used: torch refuses to say; the safe side
            return "ieee"
        return "ieee" if legacy == "highest" else "tf32"

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """``torch.empty`` with ``like``'s dtype (or ``dtype``) and device; under a
        ``torch.func`` transform ``like.new_empty``, which ``vmap`` batches as ``like``
        is batched (``torch.empty`` would make one output for the whole batch)."""
        kind = getattr(torch, dtype) if dtype else like.dtype
        if traced():
            return like.new_empty(tuple(shape), dtype=kind)
        return torch.empty(tuple(shape), dtype=kind, device=like.device)

    @staticmethod
    def allocation(like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """:meth:`empty` of an untraced call as a function of no argument (a memo's plan
        calls it: the plan's key fixes ``like``'s dtype and device)."""
        kind = getattr(torch, dtype) if dtype else like.dtype
        # Sizes as separate ints: torch parses them faster than a tuple (0.7 us, not 1.1);
        # and new_empty of an empty tensor of the dtype and device takes no keywords to
        # parse (0.64 us a call on a CPU, against 0.84 for torch.empty with dtype and
        # device). The template holds no memory (no element).
        # Where it is built, the native allocation (at::empty from C++, no parser)
        # serves instead: nt_torch._native.
        sizes = tuple(shape) or ((),)
        template = torch.empty(0, dtype=kind, device=like.device)
        fallback = functools.partial(template.new_empty, *sizes)
        return _express.allocation(template, tuple(int(size) for size in shape), fallback)

    @staticmethod
    def launch_of(kernel: Any) -> Any:
        """The kernel's launch for one site of a memo's plan, once the kernel has a fast
        path, else the kernel.  The plan runs untraced calls only, each with tensors of
        the layout its key fixes and the same scalars: the fast path's pinned launch
        checks only what differs between such calls (alignment, overlaps, tensors
        requiring grad, a newer plan of the kernel's), its hot function the rest."""
        fast = getattr(kernel, "fast_path", None)
        if fast is None:
            return hand_written.substitute(kernel, kernel, bound="site")
        miss = lambda args, kwargs: fast.miss(args, kwargs)  # noqa: E731 - read per miss
        pinned = getattr(fast, "pinned", None)
        launch = fast.hot(miss) if pinned is None else pinned(miss)
        return hand_written.substitute(kernel, launch, bound="site")

    @staticmethod
    def launch_of_stand_ins(
        kernel: Any, views: Callable[[tuple[Any, ...]], tuple[Any, ...]]
    ) -> Any:
        """:meth:`launch_of` for a plan site that passes stand-ins (the same memory as the
        kernel's arguments, in other shapes; ``views`` makes the arguments of them), or
        None where there is no pinned launch, or a hand-written route would read the
        arguments' shapes."""
        fast = getattr(kernel, "fast_path", None)
        pinned = getattr(fast, "pinned", None)
        if fast is None or pinned is None or hand_written.routed(kernel):
            return None
        miss = lambda args, kwargs: fast.miss(args, kwargs)  # noqa: E731 - read per miss
        return pinned(miss, views)

    def run(self, kernel: Any, arguments: Sequence[Any], outputs: Sequence[int]) -> list[Any]:
        """Call ``kernel`` (on Hopper, attention's forward and ``scaled_mm`` may take a
        Gluon kernel: :mod:`nt_torch.hand_written`); the outputs are the arguments at
        ``outputs``."""
        return super().run(
            kernel if traced() else hand_written.substitute(kernel, kernel), arguments, outputs
        )

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``tensor.reshape(shape)`` (a view of a contiguous tensor)."""
        return tensor.reshape(tuple(shape))

    needs_grad = staticmethod(autograd.needs_grad)

    tracing = staticmethod(traced)
    """Dynamo or a ``torch.func`` transform at work: the ops' memo stands aside."""

    keyed_values = (torch.dtype,)
    """Arguments the ops' memo keys by value besides plain scalars (``out_dtype``)."""

    signature_reads = ("{}.shape", "{}.stride()", "{}.dtype", "{}.device")
    """:meth:`signature`'s reads of one tensor, ``{}`` standing for it: the ops' memo
    writes them inline into its key functions (the type is checked apart)."""

    @staticmethod
    def signature_guard(tensors: Sequence[Any]) -> Any:
        """A C++ check that other tensors have these tensors' signatures (type, dtype,
        device, sizes, strides, dispatch keys, requires_grad): the native module's
        ``Guard`` where it is built (:mod:`nt_torch._native`, a quarter of the cost),
        else ``TensorGuards``, or None where PyTorch's private API answers otherwise
        than expected (:func:`nt_torch.fastpath.guard_factory`)."""
        from nt_torch.fastpath import guard_factory

        native = _native.extension.values
        if native and native[0] is not None:
            try:
                return native[0].Guard(tensors)
            except Exception:  # noqa: BLE001 - not plain strided tensors: TensorGuards
                pass
        factory = guard_factory()
        return None if factory is None else factory(tensors)

    signature = staticmethod(_tensor_info.signature)
    """What the ops' decisions read of a tensor, as one hashable value; None for anything
    else (:func:`nt_torch._tensor_info.signature`)."""
