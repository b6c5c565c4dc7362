"""NineToothed for PyTorch: run NineToothed kernels on ``torch.Tensor`` arguments.

Installing this distribution lets kernels built with ``ninetoothed.make`` or
``ninetoothed.jit`` (re-exported here as :func:`make` and :func:`jit`) run on
``torch.Tensor`` arguments: its adapter (:mod:`nt_torch.adapter`) reads their
shapes, strides, dtypes and devices, and launches the generated kernel,
writing into the tensors passed in.  It is found through the ``ninetoothed``
entry-point group (see :mod:`nt_torch.plugin`).

Kernels work under ``torch.compile(fullgraph=True)`` and ``torch.func.vmap``
(through custom operators, :mod:`nt_torch.launch_operator`); :func:`custom_op`
registers one under a name of your choosing.

The kernel library's ops are :mod:`nt_torch.ops` (``nt_torch.ops.mm(a, b)``),
imported on first access.

Importing this package imports neither PyTorch nor Triton.
"""

from typing import TYPE_CHECKING, Any

from ninetoothed import jit, make
from ninetoothed.runtime.plugins import lazy_submodules

if TYPE_CHECKING:
    from nt_torch import ops

__getattr__ = lazy_submodules(__name__, ("ops",))
"""``nt_torch.ops`` (the kernel library's ops) is imported on first access."""

__version__ = "0.1.0"

__all__ = ["__version__", "custom_op", "jit", "make", "ops"]


def custom_op(name: str, kernel: Any) -> Any:
    """Register ``kernel`` as the PyTorch operator ``name`` (``"namespace::op"``).

    See :func:`nt_torch.custom_ops.custom_op` (imported here on first use, so
    that importing this package still imports no PyTorch).
    """
    from nt_torch import custom_ops

    return custom_ops.custom_op(name, kernel)
