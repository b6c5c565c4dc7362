"""The element-wise ops: ``add``, ``silu``, ``swiglu``."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ninetoothed.library import add as add_kernel
from ninetoothed.library import silu as silu_kernel
from ninetoothed.library import swiglu as swiglu_kernel
from ninetoothed.library.ops import _common as common
from ninetoothed.library.ops.framework import Framework, HostTensor
from ninetoothed.library.ops.kernels import kernel

__all__ = ["add", "pointwise", "silu", "swiglu"]


def pointwise(framework: Framework, op: str, module: ModuleType, **inputs: Any) -> Any:
    """Run an element-wise kernel on ``inputs`` (broadcast); return the new output.

    Inputs of the output's shape that are all contiguous are viewed as 1-D,
    where a program's block is plain consecutive memory; otherwise the kernel
    follows each input's shape and strides (and broadcasts it).
    """
    infos = common.describe(framework, op, **inputs)
    shapes = [info.shape for info in infos.values()]
    shape = common.broadcast_shapes(op, *shapes)
    tensors = list(inputs.values())
    like = tensors[0]
    if all(s == shape for s in shapes) and all(map(common.contiguous, infos.values())):
        count = common.numel(shape)
        flat = len(shape) == 1  # already 1-D: no views to make
        if not flat:
            tensors = [framework.reshape(tensor, (count,)) for tensor in tensors]
        found = kernel(module, patterns=((None,),) * len(tensors), ndim=1)
        outputs = [*tensors, framework.empty(like, (count,))]
        (result,) = framework.run(found, outputs, [len(tensors)])
        return result if flat else framework.reshape(result, shape)
    patterns = tuple(common.pattern(s, shape) for s in shapes)
    found = kernel(module, patterns=patterns, ndim=len(shape))
    (result,) = framework.run(found, [*tensors, framework.empty(like, shape)], [len(tensors)])
    return result


def add(framework: Framework, input: HostTensor, other: HostTensor) -> HostTensor:
    """``input + other``, element-wise, in a new tensor (like ``torch.add(input, other)``).

    Shapes broadcast (NumPy's rules); float16, bfloat16 or float32, both the
    same; any strides.  The sum is taken in float32 and rounded once.
    """
    return pointwise(framework, "add", add_kernel, input=input, other=other)


def silu(framework: Framework, input: HostTensor) -> HostTensor:
    """``input * sigmoid(input)``, element-wise, in a new tensor (like
    ``torch.nn.functional.silu``); float16, bfloat16 or float32, any shape and
    strides, computed in float32."""
    return pointwise(framework, "silu", silu_kernel, input=input)


def swiglu(framework: Framework, a: HostTensor, b: HostTensor) -> HostTensor:
    """``a * silu(b)``, element-wise, in a new tensor: the gated linear unit of
    Llama's MLP as upstream's examples define it.  Shapes broadcast; float16,
    bfloat16 or float32, both the same; any strides; computed in float32."""
    return pointwise(framework, "swiglu", swiglu_kernel, a=a, b=b)
