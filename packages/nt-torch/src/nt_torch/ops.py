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

import torch

from ninetoothed.library.ops import install, kernels
from nt_torch._framework import TorchFramework

# Under torch.compile the ops' kernel lookup (and making a new variant) runs untraced.
torch.compiler.assume_constant_result(kernels.variant_name)  # type: ignore[no-untyped-call]

framework = TorchFramework()
"""The hook the ops are bound to."""

__all__ = install(globals(), framework)


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
        namespace[name] = mark(namespace[name])


_traced_by_aot_autograd(__all__)
