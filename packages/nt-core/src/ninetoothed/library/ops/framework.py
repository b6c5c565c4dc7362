"""What the library's ops need from a framework: a small hook, one per framework.

The ops (:mod:`ninetoothed.library.ops`) do every check, every shape
computation and every choice of kernel once, for all frameworks; a framework
supplies only what differs: how to describe a tensor, allocate an output,
reshape, and run a kernel in its calling convention.  PyTorch and PaddlePaddle
kernels write into the outputs passed in (:class:`InPlace`); JAX kernels
return them (``nt_jax.ops`` overrides :meth:`Framework.run`).

Two optional members let the ops remember their decisions per call signature
(:mod:`~ninetoothed.library.ops._memo`): ``signature(value)``, a hashable
value of what the ops read of a tensor (type, shape, strides, dtype, device),
None for anything else (a tracer); and ``tracing()``, true while the
framework traces calls.  A framework without ``signature`` runs every call
in full.  A third, ``signature_reads``, gives what ``signature`` reads as
expressions of one tensor (``"{}.shape"``, ``{}`` standing for it) for the
memo to write inline into its key functions (:mod:`~ninetoothed.library.ops._keys`);
without it they call ``signature``.  A fourth, ``signature_guard(tensors)``,
makes a check (or None) that other tensors have these tensors' signatures:
the memo finds the most recent plan of a form by it, without a key.  The plans the memo records call
``allocation(like, shape, dtype)`` (a function of no argument, made once,
allocating what ``empty`` would) and an :class:`InPlace` framework's
``launch_of(kernel)`` where a framework has them
(:mod:`~ninetoothed.library.ops._recording`), and
``launch_of_stand_ins(kernel, views)`` (a launch taking tensors of the same
memory as the kernel's arguments in other shapes, or None) to leave out the
views only launches read (:mod:`~ninetoothed.library.ops._stand_ins`).  A last optional member,
``float32_products()``, says how the framework computes float32 matrix
products (``"tf32"`` or ``"ieee"``): the ops that multiply matrices follow it
(:mod:`~ninetoothed.library.ops._precision`); without it they keep Triton's
default, TF32.  And ``keyed_values``, a tuple of types besides plain scalars
that the memo may key calls by as they are (values that hash and compare by
what they mean: the framework's dtypes, an op's ``out_dtype``); a call with
an argument of any other type takes the op's full path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias

from ninetoothed.runtime.hookspecs import TensorInfo

__all__ = ["Framework", "HostTensor", "InPlace"]

HostTensor: TypeAlias = Any
"""A tensor of the framework the ops are bound to (``torch.Tensor``, ``paddle.Tensor``,
``jax.Array``): the ops' signatures name it, and each framework's ``ops.pyi`` stub
says which type it is there."""


class Framework(Protocol):
    """The per-framework hook of the library's ops."""

    name: str
    """The framework's import name (``"torch"``, ``"paddle"``, ``"jax"``)."""

    def describe(self, tensor: Any) -> TensorInfo:
        """Shape, strides (elements), dtype name, device and data pointer."""

    def empty(self, like: Any, shape: Sequence[int], dtype: str | None = None) -> Any:
        """A new row-major output of ``shape`` with ``like``'s dtype (or ``dtype``, a
        name such as ``"float32"``) and device (for a functional framework, whatever
        its kernels take for an output)."""

    def reshape(self, tensor: Any, shape: Sequence[int]) -> Any:
        """``tensor`` with a new shape (a view where the framework has views)."""

    def run(self, kernel: Any, arguments: Sequence[Any], outputs: Sequence[int]) -> list[Any]:
        """Call ``kernel`` on ``arguments``; return the outputs at those positions."""

    def needs_grad(self, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
        """Whether an op called on these arguments must be recorded for the framework's
        autodiff (cheap: it runs on every call of an op that has a backward)."""


class InPlace:
    """``run`` for frameworks whose kernels write into the outputs passed in."""

    def run(self, kernel: Any, arguments: Sequence[Any], outputs: Sequence[int]) -> list[Any]:
        """Call ``kernel``; the outputs are the arguments at ``outputs``, now written."""
        kernel(*arguments)
        return [arguments[index] for index in outputs]

    def launch_of(self, kernel: Any) -> Any:
        """What :meth:`run` calls for ``kernel``, on calls known not to be traced (the ops'
        recorded plans call it directly): the kernel itself here."""
        return kernel
