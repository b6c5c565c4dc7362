"""Compiled calls on the GPU: the kernel itself in the graph, launched by Inductor.

Under ``torch.compile`` a kernel call is a node of one of our custom operators
(``ninetoothed::launch``, or one registered with :func:`nt_torch.custom_op`),
opaque to Dynamo.  When AOTAutograd functionalises the graph, each operator's
rule for ``FunctionalTensorMode`` (:func:`rule`, registered with
``torch.library.register_torch_dispatch``, the mechanism of
``torch.library.triton_op``) replaces the node with the Triton kernel:
``torch.library.wrap_triton(function)[grid](*arguments, **meta,
num_warps=..., num_stages=...)``, a user-Triton-kernel node that Inductor
launches from its own generated code, with the outputs allocated by its memory
planner and the launch recorded in its CUDA graphs.  The arguments, grid and
configuration come from nt-triton (:func:`nt_triton.emitted.emitted_launch`),
computed by the kernel's host function on the traced sizes: with
``dynamic=True`` they are symbolic, and the graph serves every size that
keeps the kernel's constexprs (size alignments, whole-row tile sizes).

A library kernel that only maps elements or rows is handed over as the same
computation in PyTorch's ops instead, which Inductor fuses with its
neighbours (:mod:`nt_torch.fusion`; ``NINETOOTHED_COMPILED_FUSION=off`` keeps
the kernel).

The configuration is the one eager calls use.  Tracing has no data, so a
call whose tuning key has no configuration yet (remembered or persisted) is
tuned right there, once, by an eager call on stand-in tensors of the same
shapes, strides and dtypes (:func:`_tune_on_stand_ins`), before anything is
captured; the choice goes to the same table as eager calls'.

The hand-over is the default; ``NINETOOTHED_COMPILED_LAUNCH=operator`` turns
it off (a failure after it, in Inductor's own compile of the kernel, can no
longer fall back).  Where it is off, and where the kernel cannot be handed
over, the rule leaves the node to functionalisation (``auto_functionalized``:
the operator's implementation launches through the eager fast path when the
graph runs).  :func:`reason` says why, checked in this order: the knob set
to anything but ``inductor``, a PyTorch without ``wrap_triton``, Triton's
interpreter, jagged parameters, tensors off the GPU, sizes or scalars known
only at run time (data-dependent: no hint), ``torch.export`` (which keeps
custom operators), and the library's attention forward and ``scaled_mm`` where,
on Hopper, the operator's launch may take a hand-written Gluon kernel instead
(:func:`nt_torch.hand_written.keeps_the_operator`: faster than the NineToothed
kernel by more than the operator's dispatch costs).  A source Inductor could
not paste unchanged into its generated module
(:class:`nt_triton.emitted.NotEmbeddable`) keeps the generic operator too, with
a warning.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.adapter import cuda_index
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import GeneratedKernel, TensorInfo
from nt_torch import fusion, hand_written
from nt_torch._tensor_info import tensor_info

__all__ = ["DEVICE_TYPES", "KNOB", "emit", "reason", "rule", "use_adapter"]

KNOB = "NINETOOTHED_COMPILED_LAUNCH"
"""Unset or ``inductor``: Inductor launches the kernel where it can; anything else
(``operator``): every compiled call keeps the generic operator."""

DEVICE_TYPES = ("cuda",)
"""Devices whose tensors Inductor launches user Triton kernels on."""

KernelCall = Callable[
    [tuple[Any, ...], dict[str, Any]], tuple[GeneratedKernel, tuple[Any, ...], dict[str, Any]]
]
"""An operator's arguments -> (the kernel, its arguments in parameter order, its keywords)."""


def rule(kernel_call: KernelCall) -> Callable[..., Any]:
    """The ``FunctionalTensorMode`` rule of an operator whose arguments ``kernel_call``
    turns into a kernel call (see the module docstring)."""

    def decompose(
        mode: Any, op: Any, types: tuple[type, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not _known(types):  # another tensor subclass: let it dispatch first
            return NotImplemented
        kernel, call_args, call_kwargs = kernel_call(args, kwargs)
        with mode:
            if _handed_over(kernel, call_args, call_kwargs):
                return None
        return mode.__torch_dispatch__(op, types, args, kwargs)

    return decompose


def _handed_over(kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether Inductor gets the call: as PyTorch's ops where the library kernel has them
    (:mod:`nt_torch.fusion`), else as the kernel itself (:func:`emit`)."""
    if reason(kernel, args, kwargs) is not None:
        return False
    composite = fusion.composite(kernel)
    if composite is not None:
        composite(*args)  # the symbols (block sizes) do not change what it computes
        return True
    return _emitted(kernel, args, kwargs)


def _emitted(kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """:func:`emit`, falling back to the generic operator (with a warning) where handing the
    kernel over fails unexpectedly; a call our checks refuse raises as eagerly."""
    try:
        return emit(kernel, args, kwargs)
    except LaunchError:
        raise
    except Exception as error:  # noqa: BLE001 - the generic operator still runs the call
        warnings.warn(
            f"{kernel.spec.label}: Inductor could not be handed the kernel "
            f"({type(error).__name__}: {error}); this call keeps the generic operator",
            stacklevel=2,
        )
        return False


def emit(kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Record the kernel's launch through ``wrap_triton``; False where it cannot be."""
    from nt_triton.emitted import emitted_launch

    if reason(kernel, args, kwargs) is not None:
        return False
    adapter = _adapter()
    bound = adapter.bind(kernel, args, kwargs, describe=_symbolic)
    device_name = _device_name(adapter, bound.device)

    def tune() -> None:
        _tune_on_stand_ins(adapter, kernel, args, kwargs)

    launch = emitted_launch(kernel, bound, _concrete(bound), device_name, tune)  # type: ignore[arg-type]
    if launch is None:
        return False
    torch.library.wrap_triton(launch.function)[launch.grid](
        *launch.arguments,
        **launch.meta,
        num_warps=launch.num_warps,
        num_stages=launch.num_stages,
    )
    return True


def reason(kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """Why this call keeps the generic operator under ``torch.compile``; None where
    Inductor can launch the kernel (see the module docstring)."""
    mode = os.environ.get(KNOB, "inductor").strip().lower()
    if mode != "inductor":
        return f"{KNOB}={mode} (the generic operator; 'inductor' hands the kernel over)"
    if not hasattr(torch.library, "wrap_triton"):
        return f"PyTorch {torch.__version__} has no torch.library.wrap_triton"
    if kernel.interpreting:
        return "Triton's interpreter runs the kernel"
    if kernel.spec.jagged_parameters:
        return "the kernel has jagged parameters"
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    off = sorted({t.device.type for t in tensors} - set(DEVICE_TYPES))
    if off:
        return f"tensors on {', '.join(off)}"
    values = [v for t in tensors for v in (*t.shape, *t.stride())]
    values += [a for a in (*args, *kwargs.values()) if not isinstance(a, torch.Tensor)]
    if any(isinstance(v, torch.SymFloat) or not _has_hint(v) for v in values):
        return "a size or scalar is known only when the graph runs (data-dependent)"
    if _exporting():
        return "torch.export keeps custom operators"
    if hand_written.keeps_the_operator(kernel, args, _hint):
        return "on Hopper the operator's launch may take a hand-written Gluon kernel"
    return None


_ADAPTER_TYPES: list[type] = []
_ADAPTERS: list[Any] = []


def use_adapter(adapter_type: type) -> None:
    """Describe tensors with an ``adapter_type`` of this module's own (the PyTorch
    adapter registers itself as it is defined: this module, which the adapter imports
    through the launch operator, does not import it)."""
    _ADAPTER_TYPES[:] = [adapter_type]
    _ADAPTERS.clear()


def _adapter() -> Any:
    """A PyTorch adapter of this module's own: the plugin registry's lookup would record
    the functional tensors' type in a table Dynamo guarded while it traced."""
    if not _ADAPTERS:
        if not _ADAPTER_TYPES:
            raise LaunchError("nt_torch.inductor: no PyTorch adapter registered (import nt_torch)")
        _ADAPTERS.append(_ADAPTER_TYPES[0]())
    return _ADAPTERS[0]


def _device_name(adapter: Any, device: str) -> str:
    """The name tuning tables are kept under for ``device`` (the GPU's model)."""
    if not device.startswith("cuda"):
        return device
    name: str = adapter.host_reads().device_name(cuda_index(device))
    return name


def _known(types: tuple[type, ...]) -> bool:
    """Whether every tensor type is one functionalisation itself made (or a plain tensor)."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor

    return all(t in (torch.Tensor, FunctionalTensor) or issubclass(t, FakeTensor) for t in types)


def _has_hint(value: Any) -> bool:
    """Whether ``value`` is a plain number or a symbolic one with an example value."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return bool(value.node.has_hint())
    return True


def _hint(value: Any) -> Any:
    """The example value of a symbolic number (a plain number as it is)."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.hint
    return value


def _symbolic(tensor: Any) -> TensorInfo:
    """A traced tensor's description: symbolic sizes and strides, no pointer."""
    return tensor_info(tensor, 0, remember=False)


def _concrete(bound: BoundCall) -> BoundCall:
    """``bound`` with every symbolic size, stride and scalar replaced by its hint."""
    tensors = [
        info._replace(
            shape=tuple(_hint(size) for size in info.shape),
            strides=tuple(_hint(stride) for stride in info.strides),
        )
        for info in bound.tensors
    ]
    scalars = {name: _hint(value) for name, value in bound.scalars.items()}
    return bound._replace(tensors=tensors, scalars=scalars)


def _tune_on_stand_ins(
    adapter: Any, kernel: GeneratedKernel, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> None:
    """One eager call on stand-ins of the traced tensors: it tunes the call's key and
    records the winner (the traced tensors have no data to run on)."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), torch.no_grad():
        real = tuple(_stand_in(a) if isinstance(a, torch.Tensor) else _hint(a) for a in args)
        keywords = {name: _hint(value) for name, value in kwargs.items()}
        bound = adapter.bind(kernel, real, keywords, describe=_pointed)
        launcher = adapter.launcher(kernel)
        if launcher is not None:
            launcher.launch_bound(bound, real, keywords)


def _pointed(tensor: Any) -> TensorInfo:
    """A real tensor's description with its pointer (``torch.compiler.is_compiling()``
    holds while Inductor compiles, and the adapter's own description leaves it out)."""
    return tensor_info(tensor, tensor.data_ptr(), remember=False)


def _stand_in(tensor: Any) -> torch.Tensor:
    """A real tensor with the traced one's (hinted) shape, strides, dtype and device."""
    shape = [int(_hint(size)) for size in tensor.shape]
    strides = [int(_hint(stride)) for stride in tensor.stride()]
    extent = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))
    storage = torch.empty(extent if all(shape) else 0, dtype=tensor.dtype, device=tensor.device)
    if tensor.dtype.is_floating_point and storage.element_size() > 1:
        storage.normal_()  # values like a model's; integers (indices) stay in range at 0
    else:
        storage.zero_()
    return storage.as_strided(shape, strides)


def _exporting() -> bool:
    """Whether ``torch.export`` traces (it keeps custom operators, as for ``triton_op``)."""
    try:
        from torch.export._trace import custom_triton_ops_decomposition_disabled
    except ImportError:
        return False
    return bool(custom_triton_ops_decomposition_disabled())  # type: ignore[no-untyped-call]
