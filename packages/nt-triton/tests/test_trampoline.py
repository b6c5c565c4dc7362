"""Trampolines (``nt_triton._trampoline``): a generated kernel behind another parameter order."""

from __future__ import annotations

import pytest
import torch

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton._abi import ParameterKind
from nt_triton._codegen import naming
from nt_triton._kernel import TritonKernel
from nt_triton._trampoline import Trampoline

pytestmark = pytest.mark.interpreter_only


def add(x, y, z):
    z = x + y  # noqa: F841


def arrangement(x, y, z):
    return x.tile((16,)), y.tile((16,)), z.tile((16,))


KERNEL = ninetoothed.make(arrangement, add, (Tensor(1), Tensor(1), Tensor(1))).generated
assert isinstance(KERNEL, TritonKernel)


def reversed_pointers() -> Trampoline:
    """The kernel's parameters with the pointers in reverse order, built from its signature."""
    signature = KERNEL.signature
    pointers = [(p.name, False) for p in reversed(signature.pointers)]
    others = [(p.name, p.constexpr) for p in signature if p.kind is not ParameterKind.POINTER]
    return Trampoline(
        name=naming.trampoline(KERNEL.spec.name, "test"),
        parameters=tuple(pointers + others),
        call=tuple(p.name for p in signature),
        multiple_of_16=("x_size_0",),
    )


def test_source() -> None:
    source = reversed_pointers().source()
    assert (
        "def add_test(z_pointer, y_pointer, x_pointer, x_size_0, x_stride_0, y_size_0, "
        "y_stride_0, z_size_0, z_stride_0, ninetoothed_int64: tl.constexpr, "
        "ninetoothed_aligned_0: tl.constexpr, ninetoothed_aligned_1: tl.constexpr, "
        "ninetoothed_aligned_2: tl.constexpr):"
    ) in source
    assert "    x_size_0 = x_size_0 // 16 * 16\n" in source
    assert f"    {naming.CALLEE}(x_pointer, y_pointer, z_pointer, x_size_0," in source


def test_runs_the_kernel_in_the_other_order() -> None:
    x, y = torch.arange(32.0), torch.full((32,), 3.0)
    z = torch.full((32,), float("nan"))
    plan = KERNEL.prepare([info_of(t) for t in (x, y, z)], [x, y, z], {})
    values = dict(zip((p.name for p in KERNEL.signature.host), plan.arguments))
    trampoline = reversed_pointers()
    function = trampoline.load(KERNEL.function)
    arguments = [values[name] for name, constexpr in trampoline.parameters if not constexpr]
    constexprs = {name: values[name] for name, constexpr in trampoline.parameters if constexpr}
    function[plan.grid](*arguments, **constexprs)
    torch.testing.assert_close(z, x + 3)


def info_of(tensor: torch.Tensor) -> TensorInfo:
    return TensorInfo(tuple(tensor.shape), tensor.stride(), "float32", "cpu", tensor.data_ptr())
