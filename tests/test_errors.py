"""Bad input gets a clear error naming the parameter, the expected and the actual value.

Errors knowable at ``make`` time are raised there; the rest at call time,
before anything reaches Triton.
"""

from __future__ import annotations

import functools
import os
import random
import warnings
from math import sqrt
from random import random as uniform

import pytest
import torch
from support.base import ON_GPU
from support.tutorial import add, matmul, softmax

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor, block_size
from ninetoothed.errors import (
    ArrangementError,
    CodegenError,
    DeclaredDtypeWarning,
    LaunchError,
    MetaOperationError,
)
from nt_triton import knobs


@pytest.fixture(autouse=True)
def _tensors_where_kernels_run():
    """Tensors made without a device live where kernels run (the GPU in a GPU run),
    so that each test meets the error it is about, not the device check."""
    with torch.device("cuda" if ON_GPU else "cpu"):
        yield


def unexpanded_matmul(input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K):
    """The tutorial's matmul arrangement before ``expand``."""
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def test_mismatched_outermost_shapes_at_make():
    """Numbers of blocks the tuner chooses cannot be required to be 1: refused at make."""

    def arrangement(input, other, output):
        return unexpanded_matmul(input, other, output, block_size(), block_size(), block_size())

    with pytest.raises(ArrangementError, match=r"input: \(.*, 1\); other: \(1, .*\); output"):
        ninetoothed.make(arrangement, matmul.application, (Tensor(2), Tensor(2), Tensor(2)))


def test_mismatched_outermost_shapes_of_fixed_blocks_at_launch():
    """With fixed block sizes the literal 1s are sizes of the arguments: checked at launch."""

    def arrangement(input, other, output):
        return unexpanded_matmul(input, other, output, 16, 16, 16)

    kernel = ninetoothed.make(arrangement, matmul.application, (Tensor(2), Tensor(2), Tensor(2)))
    device = "cuda" if ON_GPU else "cpu"
    input, other = torch.randn(40, 20, device=device), torch.randn(20, 16, device=device)
    with pytest.raises(LaunchError, match=r"'input' has outermost shape \(3, 1\)"):
        kernel(input, other, torch.empty(40, 16, device=device))


def test_a_value_where_the_arrangement_expects_a_tensor_is_named():
    """``(Tensor(1), 3)``: the arrangement's own AttributeError, with which parameter got
    what instead of a Tensor."""

    def tiles(x, y, BLOCK=ninetoothed.block_size()):  # noqa: B008
        return x.tile((BLOCK,)), y.tile((BLOCK,))

    def double(x, y):
        y = 2 * x  # noqa: F841

    pattern = (
        r"raised AttributeError: 'int' object has no attribute 'tile'; make was given "
        r"int 3 for 'y', not a Tensor"
    )
    with pytest.raises(ArrangementError, match=pattern) as caught:
        ninetoothed.make(tiles, double, (Tensor(1), 3))
    assert isinstance(caught.value.__cause__, AttributeError)


def test_arrangement_returning_wrong_count():
    with pytest.raises(ArrangementError, match="returned 2 tensors for 3 parameters"):
        ninetoothed.make(lambda x, y, z: (x, y), add.application, (Tensor(1),) * 3)


def test_a_meta_operation_error_names_the_arrangement_and_its_parameter():
    """The tensors' generated names (``ninetoothed_tensor_7``) mean nothing to the user:
    the error names the arrangement and the parameter that received the tensor."""

    def misarranged(input, other, output, BLOCK=ninetoothed.block_size()):  # noqa: B008
        return input.tile((BLOCK,)), other.tile((BLOCK, BLOCK)), output.tile((BLOCK,))

    with pytest.raises(MetaOperationError) as caught:
        ninetoothed.make(misarranged, add.application, (Tensor(1), Tensor(1), Tensor(1)))
    message = str(caught.value)
    assert "<locals>.misarranged: tile on other: tile_shape (BLOCK, BLOCK) has 2 entries" in message
    assert "(shape (other_size_0,))" in message and "ninetoothed_tensor" not in message


@pytest.mark.parametrize("role", ["arrangement", "application"])
def test_make_needs_functions(role):
    functions = {"arrangement": add.arrangement, "application": add.application, role: None}
    with pytest.raises(TypeError, match=f"make: {role} must be a function, got NoneType"):
        ninetoothed.make(functions["arrangement"], functions["application"], (Tensor(1),) * 3)


def test_application_parameter_count():
    def application(x, y):
        pass

    with pytest.raises(ArrangementError, match="takes 2 parameters"):
        ninetoothed.make(add.arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


def test_indexing_a_tile_needs_one_index_per_dimension():
    """``x[i]`` of a tile is its element there (upstream's reading); a partial index is refused."""

    def application(x, y, z):
        z = x[0, 1]  # noqa: F841

    with pytest.raises(CodegenError, match="'x' is a tile of shape .*needs 1 indices, got 2"):
        ninetoothed.make(add.arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


def test_an_element_of_a_tile_cannot_be_indexed_again():
    def application(x, y, z):
        z = x[0][0]  # noqa: F841

    with pytest.raises(CodegenError, match="'x' is already one element"):
        ninetoothed.make(add.arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


def test_loading_a_hierarchical_level_needs_an_index():
    def application(input, other, output):
        output = input  # noqa: F841

    with pytest.raises(CodegenError, match="more level.*index it"):
        ninetoothed.make(matmul.arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))


def flagged_tiles(x, y, flag):
    return x.tile((16,)), y.tile((16,)), flag


def reads_an_undefined_name(x, y, flag):
    if flag:
        y = x + not_defined_anywhere  # noqa: F821, F841


def reads_an_undefined_name_in_a_helper(x, y, flag):
    y = shifted(x)  # noqa: F841


def shifted(tile):
    return tile + also_not_defined  # noqa: F821


def reads_through_a_decorated_helper(x, y, flag):
    y = cached_shift(x)  # noqa: F841


@functools.cache
def cached_shift(tile):  # code generation inlines the function it wraps
    return tile + not_defined_either  # noqa: F821


FLAGS = {
    "constexpr given at the call": lambda: Tensor(0, constexpr=True),
    "constexpr fixed at make": lambda: Tensor(0, constexpr=True, value=1),
    "run-time scalar": lambda: Tensor(0),
}


@pytest.mark.parametrize("flag", FLAGS)
@pytest.mark.parametrize(
    "application, reader, name",
    [
        (reads_an_undefined_name, "reads_an_undefined_name", "not_defined_anywhere"),
        (reads_an_undefined_name_in_a_helper, "shifted", "also_not_defined"),
        (reads_through_a_decorated_helper, "cached_shift", "not_defined_either"),
    ],
)
def test_an_undefined_name_is_refused_at_make(application, reader, name, flag):
    """Before, a constexpr given at the call deferred Triton's compile, and with it
    the refusal, to the first call."""
    where = rf"{name} is not defined \(read by {reader} at \S*test_errors.py:\d+\)"
    with pytest.raises(CodegenError, match=where):
        ninetoothed.make(flagged_tiles, application, (Tensor(1), Tensor(1), FLAGS[flag]()))


def adds_a_random_number(x, y, flag):
    y = x + random.random()  # noqa: F841


def adds_a_uniform_number(x, y, flag):
    y = x + uniform()  # noqa: F841


def adds_the_process_id(x, y, flag):
    y = x + os.getpid()  # noqa: F841


def adds_a_square_root(x, y, flag):
    y = x * sqrt(2.0)  # noqa: F841


@pytest.mark.parametrize(
    "application, call",
    [
        (adds_a_random_number, "random.random"),
        (adds_a_uniform_number, "uniform"),
        (adds_the_process_id, "os.getpid"),
        (adds_a_square_root, "sqrt"),
    ],
)
def test_a_python_function_implemented_in_c_is_refused_naming_the_call(application, call):
    """Such functions (some with no module at all) run on the host: a kernel cannot
    call them.  The error names the call, the file and the line."""
    line = application.__code__.co_firstlineno + 1
    where = rf"'{call}' \(at \S*test_errors.py:{line}\), a Python function implemented in C"
    with pytest.raises(CodegenError, match=where):
        ninetoothed.make(flagged_tiles, application, (Tensor(1), Tensor(1), Tensor(0)))


def symbol_tiles(x, y):
    block = Symbol("BLOCK", constexpr=True)  # named in the application, not a global
    return x.tile((block,)), y.tile((block,))


def names_bound_every_way(x: Undeclared, y) -> Undeclared:  # noqa: F821 - never evaluated
    total = x
    for step in range(2):
        total += step
    y = total * BLOCK  # noqa: F821, F841


def test_names_an_application_binds_or_the_kernel_defines_are_not_refused():
    kernel = ninetoothed.make(symbol_tiles, names_bound_every_way, (Tensor(1), Tensor(1)))
    x = torch.randn(20)
    y = torch.full_like(x, float("nan"))
    kernel(x, y, BLOCK=16)
    torch.testing.assert_close(y, (x + 1) * 16)


def test_missing_constexpr_symbol():
    x = torch.randn(8)
    with pytest.raises(LaunchError, match=r"missing constexpr symbol\(s\) BLOCK_SIZE"):
        add.constexpr_kernel(x, x, torch.empty_like(x))


def test_unknown_keyword():
    x = torch.randn(8)
    with pytest.raises(LaunchError, match="unexpected keyword argument 'BLOCK'"):
        add.kernel(x, x, torch.empty_like(x), BLOCK=4)


def test_wrong_argument_count():
    x = torch.randn(8)
    with pytest.raises(LaunchError, match=r"takes 3 positional arguments \(x, y, z\), got 2"):
        add.kernel(x, x)


def test_wrong_rank():
    x = torch.randn(8)
    with pytest.raises(
        LaunchError, match=r"'y' expects 1 dimensions, got a tensor of shape \(2, 4\)"
    ):
        add.kernel(x, x.view(2, 4), x)


def test_non_tensor_argument():
    x = torch.randn(8)
    with pytest.raises(
        LaunchError, match="'y' expects a torch tensor of 1 dimensions, got builtins.list"
    ):
        add.kernel(x, [1.0] * 8, x)


def pinned(kernel: ninetoothed.Kernel, value: int = 16) -> dict[str, int]:
    """Every meta symbol of ``kernel`` pinned to ``value`` (skips auto-tuning)."""
    return {name: value for name in kernel.spec.meta_symbols}


def test_incompatible_shapes_at_call():
    a, b = torch.randn(20, 8), torch.randn(8, 16)
    with pytest.raises(
        LaunchError,
        # Below the grid, the arrangement ties input's rows to output's rows.
        match=r"'input' \(shape \(20, 8\), dimension 0: 20\) and 'output' \(shape \(40, 16\)",
    ):
        matmul.kernel(a, b, torch.empty(40, 16, device=a.device), **pinned(matmul.kernel))


def test_conv2d_channel_mismatch_at_call():
    # The library's kernel, called directly: the op itself checks channels first.
    from ninetoothed.library import conv2d
    from ninetoothed.library.ops.kernels import kernel

    conv2d_kernel = kernel(conv2d, stride=(1, 1), padding=(0, 0), dilation=(1, 1))
    # One filter channel against three input channels: the squeezed channel
    # dimension of the tiled input has size 3, not 1.
    input, filter = torch.randn(1, 3, 5, 5), torch.randn(2, 1, 3, 3)
    # The channels are tied (input's tile is the filter's shape): that agreement is
    # checked first; the squeezed size's requirement would catch it too.
    with pytest.raises(LaunchError, match=r"'input' \(shape \(1, 3, 5, 5\), dimension 1: 3\)"):
        conv2d_kernel(input, filter, torch.empty(1, 2, 3, 3, device=input.device))


def test_no_adapter_for_arguments():
    with pytest.raises(ninetoothed.errors.AdapterNotFoundError):
        add.kernel([1.0], [2.0], [3.0])


def test_cpu_tensors_to_a_gpu_launch(monkeypatch):
    monkeypatch.setattr(knobs, "interpreting", lambda: False)
    x = torch.randn(8, device="cpu")
    with pytest.raises(LaunchError, match="on cpu, but kernels run on a GPU.*TRITON_INTERPRET=1"):
        add.kernel(x, x, torch.empty_like(x))


def test_declared_dtype_and_size_are_checked():
    def application(x, y):
        y = x  # noqa: F841

    kernel = ninetoothed.make(
        lambda x, y: (x.tile((4,)), y.tile((4,))),
        application,
        (Tensor(1, dtype=ntl.float16), Tensor(shape=(8,))),
    )
    with pytest.raises(DeclaredDtypeWarning, match="'x' expects dtype float16, got float32"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeclaredDtypeWarning)
            kernel(torch.randn(8), torch.empty(8))
    with pytest.raises(LaunchError, match=r"'y' expects size 8 in dimension 0, got shape \(9,\)"):
        kernel(torch.randn(8, dtype=torch.float16), torch.empty(9))


def test_pinning_meta_symbols_needs_all():
    a = torch.randn(4, 4)
    first, *others = sorted(matmul.kernel.spec.meta_symbols)
    with pytest.raises(LaunchError, match=f"missing {', '.join(others)}"):
        matmul.kernel(a, a, torch.empty(4, 4, device=a.device), **{first: 16})


def test_scalar_parameter_given_a_tensor():
    from support.tutorial import elementwise

    x = torch.randn(8)
    with pytest.raises(LaunchError, match="'alpha' is a scalar"):
        elementwise.scale_kernel(x, x, torch.empty_like(x))


def test_softmax_constexpr_must_be_a_number():
    x = torch.randn(2, 8)
    with pytest.raises(LaunchError, match="'BLOCK_SIZE' must be given a number"):
        softmax.kernel(x, torch.empty_like(x), BLOCK_SIZE="8")


def test_pinned_meta_value_must_be_a_power_of_two():
    a = torch.randn(4, 4)
    pins = {name: 16 for name in matmul.kernel.spec.meta_symbols}
    pins[next(iter(pins))] = 48
    with pytest.raises(LaunchError, match="takes powers of two.*got 48"):
        matmul.kernel(a, a, torch.empty(4, 4, device=a.device), **pins)
