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
from nt_triton._trampoline import Trampoline, outputs_last, trampoline_function

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
    dtype = str(tensor.dtype).removeprefix("torch.")
    return TensorInfo(tuple(tensor.shape), tensor.stride(), dtype, "cpu", tensor.data_ptr())


@pytest.mark.parametrize("every_output_last", [False, True])
@pytest.mark.parametrize("size", [1, 40, 48])
def test_outputs_last_lays_out_a_fresh_output(every_output_last: bool, size: int) -> None:
    """jax-triton's order: the arguments (a fresh output's pointer left out), then the
    outputs' pointers, then the constexprs by name; divisible sizes stated."""
    x, y = torch.randn(size, dtype=torch.float64), torch.randn(size, dtype=torch.float64)
    z = torch.full((size,), float("nan"), dtype=torch.float64)
    tensors = [x, y, z]
    plan = KERNEL.prepare([info_of(t) for t in tensors], tensors, {})
    layout = outputs_last(KERNEL, plan, tensors, [2], [True], every_output_last=every_output_last)
    names = [name for name, constexpr in layout.trampoline.parameters if not constexpr]
    assert names[:2] == ["x_pointer", "y_pointer"] and "z_pointer" not in names
    assert names[-1] == naming.output_pointer(0)
    assert layout.tensor_positions == {0: 0, 1: 1}
    assert layout.args[:2] == (x, y)
    assert list(layout.scalar_names) == names[2:-1]
    assert set(layout.trampoline.multiple_of_16) == (
        {"x_size_0", "y_size_0", "z_size_0"} if size % 16 == 0 else set()
    )
    function = trampoline_function(KERNEL, layout.trampoline)
    assert trampoline_function(KERNEL, layout.trampoline) is function, "loaded once"
    function[plan.grid](*layout.args, z, **layout.constexprs)
    torch.testing.assert_close(z, x + y)


def test_outputs_last_passes_an_aliased_output_twice_when_asked() -> None:
    """jax-triton 0.3 passes an aliased output's buffer in its place and again at the end."""
    x, y, z = (torch.randn(20, dtype=torch.float64) for _ in range(3))
    tensors = [x, y, z]
    plan = KERNEL.prepare([info_of(t) for t in tensors], tensors, {})
    legacy = outputs_last(KERNEL, plan, tensors, [2], [False], every_output_last=True)
    names = [name for name, constexpr in legacy.trampoline.parameters if not constexpr]
    assert names[:3] == ["x_pointer", "y_pointer", "z_pointer"]
    assert names[-1] == naming.output_pointer(0) and legacy.tensor_positions == {0: 0, 1: 1, 2: 2}
    current = outputs_last(KERNEL, plan, tensors, [2], [False], every_output_last=False)
    assert naming.output_pointer(0) not in dict(current.trampoline.parameters)
