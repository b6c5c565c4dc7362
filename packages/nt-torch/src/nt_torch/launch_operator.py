"""One generic custom operator that launches any kernel: ``ninetoothed::launch``.

Kernels not registered with :func:`nt_torch.custom_ops.custom_op` still have to
be opaque to Dynamo and ``torch.func``, but an operator cannot be registered
while Dynamo traces.  So one operator, defined when this module is imported
(which the ``torch`` plugin does as soon as PyTorch is loaded), launches every
kernel::

    ninetoothed::launch(str kernel, Tensor[] inputs, Tensor(a!)[] outputs,
                        Scalar[] scalars, str[] symbols, Scalar[] values) -> ()

``kernel`` is the key of the generated kernel in :data:`_kernels` (its
cached source file's path); ``inputs`` are the tensors it reads only, ``outputs`` the
ones it writes (the operator mutates them: ``auto_functionalized`` under
``torch.compile``), ``scalars`` the ``Tensor(0)`` arguments, and
``symbols``/``values`` the call's keywords.  The implementation finds the
kernel's entry by that key (a dict lookup; the kernel, its adapter, the
reordering and the launch, made on its first call), puts the arguments back
in parameter order and launches through the eager fast path's plans
(:mod:`nt_torch.runtime`); only a call without a plan is validated in full.
The fake implementation returns nothing and runs only while tracing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
from torch._subclasses.functional_tensor import FunctionalTensorMode

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.binding import arity_error
from ninetoothed.runtime.hookspecs import GeneratedKernel
from nt_torch import inductor, runtime

__all__ = ["call"]

_kernels: dict[str, tuple[GeneratedKernel, Any]] = {}
"""Number -> (generated kernel, the adapter that launches it eagerly)."""

_library = torch.library.Library("ninetoothed", "FRAGMENT")  # type: ignore[no-untyped-call]
_library.define(  # type: ignore[no-untyped-call]
    "launch(str kernel, Tensor[] inputs, Tensor(a!)[] outputs, Scalar[] scalars, "
    "str[] symbols, Scalar[] values) -> ()"
)


def call(
    adapter: Any, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Launch ``kernel`` on ``args`` through ``ninetoothed::launch``."""
    number = _number(adapter, kernel)
    outputs_named = kernel.outputs
    inputs, outputs, scalars = [], [], []
    parameters = kernel.spec.parameters
    if len(args) != len(parameters):
        raise arity_error(kernel.spec.label, [p.name for p in parameters], len(args))
    for parameter, argument in zip(parameters, args):
        if parameter.is_scalar:
            scalars.append(argument)
        elif parameter.name in outputs_named:
            outputs.append(argument)
        else:
            inputs.append(argument)
    torch.ops.ninetoothed.launch(
        number, inputs, outputs, scalars, list(kwargs), list(kwargs.values())
    )


def _number(adapter: Any, kernel: GeneratedKernel) -> str:
    """The key standing for ``kernel``: its cached source file (one per generated source).

    Registered only when not traced: Dynamo replays a traced store after the
    graph runs, and some versions refuse to pass our objects to a function
    it assumes constant.  A kernel first met while tracing is found at launch
    by its backend (:func:`_entry`).
    """
    number = kernel.source_path
    if not torch.compiler.is_compiling() and number not in _kernels:
        _kernels[number] = (kernel, adapter)
    return number


class _Entry(NamedTuple):
    """What the operator's implementation keeps per kernel (found once, by its key)."""

    kernel: GeneratedKernel
    adapter: Any
    launch: runtime.Launch
    """The fast path's launch (:func:`nt_torch.runtime.launcher`)."""
    order: Callable[[Sequence[Any]], tuple[Any, ...]]
    """``inputs + outputs + scalars`` -> the arguments in parameter order."""


_entries: dict[str, _Entry] = {}


def _entry(number: str, tensors: list[Any]) -> _Entry:
    """The kernel loaded from ``number`` and the adapter of its tensors (once per kernel).

    A kernel first met while tracing was not registered (:func:`_number`): the
    backend that made it finds it by its source file
    (:func:`ninetoothed.runtime.plugins.loaded_kernel`).
    """
    registered = _kernels.get(number)
    if registered is None:
        from ninetoothed.runtime import plugins

        kernel = plugins.loaded_kernel(number)
        registered = _kernels[number] = (kernel, plugins.adapter_for(tensors[0]))
    kernel, adapter = registered
    launch = runtime.launcher(adapter, kernel)
    entry = _entries[number] = _Entry(kernel, adapter, launch, _order(kernel))
    return entry


def _order(kernel: GeneratedKernel) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``inputs + outputs + scalars`` -> the kernel's arguments in parameter order."""
    written = kernel.outputs
    parameters = kernel.spec.parameters
    streams = (
        [p.name for p in parameters if not p.is_scalar and p.name not in written]
        + [p.name for p in parameters if not p.is_scalar and p.name in written]
        + [p.name for p in parameters if p.is_scalar]
    )
    position = {name: index for index, name in enumerate(streams)}
    return runtime.reorder([position[p.name] for p in parameters])


def _kernel_call(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[GeneratedKernel, tuple[Any, ...], dict[str, Any]]:
    """The operator's arguments as a kernel call (for :mod:`nt_torch.inductor`'s rule).

    Runs while AOTAutograd traces, on functional tensors: the kernel is found by its
    key, but no adapter entry is made for it (that waits for real tensors)."""
    number, inputs, outputs, scalars, symbols, values = args
    from ninetoothed.runtime import plugins

    registered = _kernels.get(number)
    kernel = registered[0] if registered is not None else plugins.loaded_kernel(number)
    items = [*inputs, *outputs, *scalars]
    if len(items) != len(kernel.spec.parameters):
        raise _arity(kernel, len(items))
    return kernel, _order(kernel)(items), dict(zip(symbols, values))


def _arity(kernel: GeneratedKernel, given: int) -> LaunchError:
    return LaunchError(
        f"{kernel.spec.label} takes {len(kernel.spec.parameters)} arguments, "
        f"ninetoothed::launch got {given}"
    )


def _arguments(
    number: str, inputs: list[Any], outputs: list[Any], scalars: list[Any]
) -> tuple[_Entry, tuple[Any, ...]]:
    """The kernel's entry and the arguments back in parameter order."""
    entry = _entries.get(number) or _entry(number, [*inputs, *outputs])
    items = inputs + outputs + scalars
    if len(items) != len(entry.kernel.spec.parameters):
        raise _arity(entry.kernel, len(items))
    return entry, entry.order(items)


def _launch(
    number: str,
    inputs: list[Any],
    outputs: list[Any],
    scalars: list[Any],
    symbols: list[str],
    values: list[Any],
) -> None:
    """The implementation: two dict lookups and the fast path's launch (see :mod:`runtime`)."""
    entry, ordered = _arguments(number, inputs, outputs, scalars)
    if symbols:
        entry.launch(*ordered, **dict(zip(symbols, values)))
    else:
        entry.launch(*ordered)


def _fake(*args: Any) -> None:
    # Outputs are written in place: the operator returns nothing to allocate.
    return None


def _vmap(info: Any, in_dims: tuple[Any, ...], *operands: Any) -> Any:
    """Batching rule: the operands as ``_launch`` gets them, batched along ``in_dims``."""
    from nt_torch import vmap

    number, inputs, outputs, scalars, symbols, values = operands
    # No entry (its fast path) is made here: inside torch.compile the tensors are fake.
    kernel, ordered, keywords = _kernel_call(operands, {})
    none = [None] * len(scalars)
    dims = _order(kernel)(_dims(in_dims[1], inputs) + _dims(in_dims[2], outputs) + none)
    registered = _kernels.get(number)
    if registered is not None:
        adapter = registered[1]
    else:
        from ninetoothed.runtime import plugins

        adapter = plugins.adapter_for_arguments([*inputs, *outputs])

    def launch(*args: Any, **kwargs: Any) -> None:
        # The adapter's routing: eagerly, or (inside torch.compile, on fake tensors)
        # through this operator again, on the unbatched tensors.
        adapter.call(kernel, args, kwargs)

    vmap.batched_launch(kernel, launch, info.batch_size, list(dims), list(ordered), keywords)
    return None, None


def _dims(dims: Any, tensors: list[Any]) -> list[Any]:
    """Per-tensor batch dimensions of a list argument (vmap gives None for unbatched lists)."""
    return list(dims) if dims is not None else [None] * len(tensors)


_library.impl("launch", _launch, "CompositeExplicitAutograd")  # type: ignore[no-untyped-call]
torch.library.register_fake("ninetoothed::launch", _fake, lib=_library)
torch.library.register_vmap("ninetoothed::launch", _vmap, lib=_library)
# Under torch.compile on the GPU, the node becomes the kernel itself (nt_torch.inductor).
torch.library.register_torch_dispatch(
    "ninetoothed::launch", FunctionalTensorMode, inductor.rule(_kernel_call), lib=_library
)
