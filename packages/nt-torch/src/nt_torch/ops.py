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
import inspect
import logging
from collections.abc import Callable
from typing import Any

import torch

from ninetoothed.errors import LaunchError
from ninetoothed.library.ops import Memo, install, kernels
from ninetoothed.runtime import plugins
from nt_torch import _express
from nt_torch._after_import import when_imported
from nt_torch._framework import TorchFramework
from nt_torch.tracing import TRACING_CHECKS, traced

framework = TorchFramework()
"""The hook the ops are bound to."""

_log = logging.getLogger(__name__)

__all__ = install(globals(), framework)


class _TracedLaunchError(LaunchError, IndexError):
    """A :class:`~ninetoothed.errors.LaunchError` of an op traced under ``torch.compile``.

    Dynamo learns an op's outputs by running it on fake tensors and reports
    most exceptions of that run as its own errors.  A ``ValueRangeError``
    raised with no cause it turns into a ``torch._dynamo.exc.UserError`` with
    the same message, raised from it (PyTorch 2.11 and 2.13;
    :func:`_traced_error_type` adds that base).  ``IndexError`` is the type
    2.13 alone passes through a backend's trace.  Either way a bad call fails
    the compile with the op's own message."""


@functools.cache
def _traced_error_type() -> type[_TracedLaunchError]:
    """:class:`_TracedLaunchError` that is also a ``ValueRangeError``, made on first use:
    its module imports SymPy (0.3 s), which a compiling process has imported already."""
    from torch.utils._sympy.value_ranges import ValueRangeError

    class TracedLaunchError(_TracedLaunchError, ValueRangeError):
        __doc__ = _TracedLaunchError.__doc__

    return TracedLaunchError


class _GraphCall:
    """An op that Dynamo writes into its graph as one call (``allow_in_graph``).

    Dynamo guards every object it reads while it traces Python: traced, the
    ops' checks, kernel lookup and launch routing read hundreds of objects
    (544 guards for ``rms_norm -> silu -> add``, against 43 for torch's ops).
    Allowed in the graph, an op is one node whose only guard is the op's
    identity; AOTAutograd traces its Python when it functionalises the graph
    (``nt_torch.tracing.traced`` routes it to the operator there).  An instance,
    not a function: ``torch.compile(ops.mm)`` itself then runs the op from a
    frame of Dynamo's (it wraps callables without source), so the op is still
    one call rather than a traced top frame.

    Eager calls: once the op's memo has a plan for a signature, the op's
    express lane (:mod:`nt_torch._express`) serves repeated calls in C, and
    the class's ``__call__`` is the extension's ``dispatch``; every other call
    takes :meth:`_slow`."""

    def __init__(self, op: Callable[..., Any]) -> None:
        functools.update_wrapper(self, op)
        self._op = op
        self._lane: Any = None
        """The express lane, once the memo made a plan (``dispatch`` reads it)."""
        self._memo: Memo | None = getattr(op, "memo", None)
        if self._memo is not None:
            self._memo.planned = self._planned
            self._memo.forgotten = self._forgotten

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The op (:meth:`_slow`); replaced on the class by the express lane's dispatch."""
        return self._slow(*args, **kwargs)

    def _slow(self, *args: Any, **kwargs: Any) -> Any:
        """The op, raising :class:`_TracedLaunchError` for its errors while it is traced."""
        _express.start()  # once per process: the lane's extension, built in the background
        # A plain loop: eager calls pay a few isinstance checks, not a generator.
        for value in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(value, _SYMBOLIC):
                args, kwargs = _concrete(args), {k: _concrete(v) for k, v in kwargs.items()}
                break
        try:
            return self._op(*args, **kwargs)
        except LaunchError as error:
            if not traced() or isinstance(error, _TracedLaunchError):
                raise
            # No cause: Dynamo looks at the cause, when there is one, for the type.
            raise _traced_error_type()(*error.args) from None

    def _planned(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], tensors: tuple[bool, ...],
        guard: Any, plan: Any,
    ) -> None:  # fmt: skip
        """The memo made ``plan`` for this call's signature: the lane serves the next."""
        extension = _express.extension()
        if extension is None or self._memo is None:
            return
        if self._lane is None:
            self._lane = extension.Lane(
                slow=self._slow, framework=self._memo.framework, checks=TRACING_CHECKS,
                grad_enabled=torch.is_grad_enabled, plugins=plugins,
                no_guard=plugins.no_call_guard, settings=tuple(self._memo.settings),
            )  # fmt: skip
            _GraphCall.__call__ = extension.dispatch  # type: ignore[method-assign]
        try:
            self._lane.arm(args, kwargs, tensors, guard, plan)
        except Exception as error:  # noqa: BLE001 - a value it cannot read: the Python path
            _log.debug("express lane of %s not armed: %s", self.__name__, error)

    def _forgotten(self) -> None:
        """The memo dropped its plans: so does the lane."""
        if self._lane is not None:
            self._lane.disarm()

    def __reduce__(self) -> str:
        # The module's own op by name: pickles as the function did, and a (deep) copy of
        # a model holding an op keeps the registered object (a copy would be traced).
        return self.__name__

    def __repr__(self) -> str:
        # What help() shows of an instance: its name and the op's signature.
        return f"<nt_torch op {self.__name__}{inspect.signature(self._op)}>"


_SYMBOLIC = (torch.SymBool, torch.SymInt, torch.SymFloat)
"""Scalars Dynamo passes into the graph unspecialised (``is_causal=length > 1`` with a
dynamic ``length``): an op's Python reads its scalars as Python values."""


def _concrete(value: Any) -> Any:
    """``value`` with symbolic scalars made Python ones (in tuples and lists too).

    Reading one specialises it: the shape environment records a guard
    (``length > 1``), so the compiled code serves only calls where it holds
    and another value recompiles, as a torch op's Python does with its own
    scalar arguments.  Allowed in the graph (``allow_in_graph``), an op would
    otherwise compute with them, which its checks and kernel choice cannot."""
    if isinstance(value, torch.SymBool):
        return bool(value)
    if isinstance(value, torch.SymInt):
        return int(value)
    if isinstance(value, torch.SymFloat):
        return float(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_concrete(v) for v in value)
    return value


def _one_call_each(names: list[str]) -> None:
    """Replace each op of this module by its :class:`_GraphCall`."""
    namespace = globals()
    for name in names:
        namespace[name] = _GraphCall(namespace[name])


def _register_with_dynamo() -> None:
    """Tell Dynamo what it must not trace: each op is one call in its graph, and the ops'
    kernel lookup (which may make a new variant) is a constant it runs untraced."""
    torch.compiler.assume_constant_result(kernels.variant_name)  # type: ignore[no-untyped-call]
    namespace = globals()
    for name in __all__:
        torch.compiler.allow_in_graph(namespace[name])


_one_call_each(__all__)
# Registered once Dynamo is imported (torch.compile imports it before tracing): importing
# Dynamo here would cost every eager program about 2 s (nt_torch._after_import).
when_imported("torch._dynamo", _register_with_dynamo)
