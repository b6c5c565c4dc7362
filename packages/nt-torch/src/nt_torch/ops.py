"""NineToothed's kernel library as PyTorch functions: ``nt_torch.ops.mm(a, b)``.

Each op allocates its output like its torch counterpart and runs a kernel of
:mod:`ninetoothed.library` (made on the first call of each variant, tuned on
the GPU): ``add``, ``addmm``, ``bmm``, ``conv2d``, ``fused_add_rms_norm``,
``max_pool2d``, ``mm``, ``rms_norm``, ``rotary_position_embedding``,
``scaled_dot_product_attention``, ``silu``, ``softmax``, ``swiglu``.  Each
op's docstring gives its signature and what it supports; the same ops exist
in ``nt_paddle.ops`` and ``nt_jax.ops``.  ``add``, ``addmm``, ``bmm``, ``mm``,
``rms_norm``, ``rotary_position_embedding``, ``scaled_dot_product_attention``,
``silu`` and ``softmax`` have backwards: on tensors requiring grad they are
recorded for autograd (``loss.backward()`` flows through them); the others
refuse such tensors with a clear error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from ninetoothed.errors import LaunchError
from ninetoothed.library.ops import install, kernels
from nt_torch._framework import TorchFramework
from nt_torch.tracing import traced

# Under torch.compile the ops' kernel lookup (and making a new variant) runs untraced.
torch.compiler.assume_constant_result(kernels.variant_name)  # type: ignore[no-untyped-call]

framework = TorchFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)


class _TracedLaunchError(LaunchError, IndexError):
    """A :class:`~ninetoothed.errors.LaunchError` of an op traced under ``torch.compile``.

    Dynamo reports most exceptions of a ``nonstrict_trace``-d function as an
    unsupported output type, dropping the error itself.  A ``ValueRangeError``
    raised with no cause it turns into a ``torch._dynamo.exc.UserError`` with
    the same message, raised from it (PyTorch 2.11 and 2.13;
    :func:`_traced_error_type` adds that base).  ``IndexError`` is the type
    2.13 alone passes through its fake-tensor run.  Either way a bad call
    fails the compile with the op's own message."""


@functools.cache
def _traced_error_type() -> type[_TracedLaunchError]:
    """:class:`_TracedLaunchError` that is also a ``ValueRangeError``, made on first use:
    its module imports SymPy (0.3 s), which a compiling process has imported already."""
    from torch.utils._sympy.value_ranges import ValueRangeError

    class TracedLaunchError(_TracedLaunchError, ValueRangeError):
        __doc__ = _TracedLaunchError.__doc__

    return TracedLaunchError


def _traced_by_aot_autograd(names: list[str]) -> None:
    """Have Dynamo record each op as one call (``torch._dynamo.nonstrict_trace``), which
    AOTAutograd then traces: Dynamo guards every object it reads while it traces
    Python, and the ops' checks, kernel lookup and launch routing read hundreds
    (544 guards for ``rms_norm -> silu -> add``, against 43 for torch's ops: the
    guards cost more per call than the block's kernels on the GPU).  The graph
    is the same; eager calls pay one frame.  PyTorch without it traces them as before."""
    mark = getattr(torch._dynamo, "nonstrict_trace", None)
    if mark is None:
        return
    namespace = globals()
    for name in names:
        namespace[name] = mark(_with_traced_errors(namespace[name]))


def _with_traced_errors(op: Callable[..., Any]) -> Callable[..., Any]:
    """``op``, raising :class:`_TracedLaunchError` for its errors while it is compiled."""

    @functools.wraps(op)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return op(*args, **kwargs)
        except LaunchError as error:
            if not traced() or isinstance(error, _TracedLaunchError):
                raise
            # No cause: Dynamo looks at the cause, when there is one, for the type.
            raise _traced_error_type()(*error.args) from None

    return checked


_traced_by_aot_autograd(__all__)
