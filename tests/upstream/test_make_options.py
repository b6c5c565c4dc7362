"""``make``'s and ``jit``'s options as upstream spells them.

``num_warps`` / ``num_stages`` take an int or a tuple (a tuple is tuned over),
``max_num_configs`` caps auto-tuning, ``kernel_name`` names the kernel and
``caller="torch"`` is the default.  A misspelt option is an error naming the
close matches; ``jit`` compiles just in time and says so when given
ahead-of-time options (``make`` compiles ahead of time: tests/aot).
"""

import functools
import os

import pytest
import torch

import ninetoothed
from ninetoothed import Tensor

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
DEVICE = "cuda" if ON_GPU else "cpu"


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    z = x + y


def run(kernel):
    x = torch.randn(300, device=DEVICE)
    y = torch.randn(300, device=DEVICE)
    z = torch.full_like(x, float("nan"))
    kernel(x, y, z)
    torch.testing.assert_close(z, x + y)


def make(**options):
    pinned = functools.partial(arrangement, BLOCK_SIZE=64)
    return ninetoothed.make(pinned, application, (Tensor(1), Tensor(1), Tensor(1)), **options)


def test_integer_warps_and_stages():
    run(make(num_warps=4, num_stages=2))


def test_kernel_name_caller_and_max_num_configs():
    run(make(kernel_name="my_add", caller="torch", max_num_configs=2))


def test_prettify_is_accepted_by_make_and_jit():
    """Upstream's jit takes ``_prettify`` (it formats the generated file)."""
    run(make(_prettify=True))

    def add(x: Tensor(1).tile((64,)), y: Tensor(1).tile((64,)), z: Tensor(1).tile((64,))):
        z = x + y  # noqa: F841

    run(ninetoothed.jit(add, caller="torch", kernel_name="add_kernel", _prettify=True))
    with pytest.raises(TypeError, match="_prettify must be a bool, got str"):
        make(_prettify="yes")


def test_tuples_of_warps_and_stages_are_tuned_over():
    kernel = make(num_warps=(2, 4), num_stages=(1, 2))
    tuned = sorted((c.num_warps, c.num_stages) for c in kernel.generated.configurations)
    assert tuned == [(2, 1), (2, 2), (4, 1), (4, 2)]
    run(kernel)


def test_tuples_with_an_auto_tuned_block_size():
    tensors = (Tensor(1), Tensor(1), Tensor(1))
    kernel = ninetoothed.make(
        arrangement,
        application,
        tensors,
        num_warps=(4, 8),
        num_stages=(2, 3),
        max_num_configs=3,
    )
    configurations = kernel.generated.configurations
    assert len(configurations) == 3  # max_num_configs caps the product
    assert {c.num_warps for c in configurations} <= {4, 8}
    assert {c.num_stages for c in configurations} <= {2, 3}
    run(kernel)


def test_a_misspelt_option_names_the_close_match():
    with pytest.raises(TypeError, match="num_warps"):
        make(num_warp=8)


def test_a_misspelt_jit_option_names_the_close_match():
    with pytest.raises(TypeError, match="num_stages"):

        @ninetoothed.jit(num_stage=2)
        def kernel(x: Tensor(1).tile((64,)), y: Tensor(1).tile((64,))):
            y = x


@pytest.mark.parametrize("options", [{"caller": "cuda"}, {"output_dir": "."}], ids=repr)
def test_jit_refuses_ahead_of_time_options(options):
    with pytest.raises(NotImplementedError, match="jit compiles just in time"):

        @ninetoothed.jit(**options)
        def kernel(x: Tensor(1).tile((64,)), y: Tensor(1).tile((64,))):
            y = x  # noqa: F841


def test_output_dir_without_an_ahead_of_time_caller_is_refused():
    with pytest.raises(TypeError, match="pass caller='cuda' too"):
        make(output_dir=".")


def test_build_refuses_an_empty_configuration_list():
    with pytest.raises(ValueError, match="configs is empty"):
        ninetoothed.build(lambda: None, (), kernel_name="nothing")


def test_jit_with_options():
    @ninetoothed.jit(num_warps=4, num_stages=2)
    def copy_kernel(x: Tensor(1).tile((64,)), y: Tensor(1).tile((64,))):
        y = x

    x = torch.randn(300, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    copy_kernel(x, y)
    torch.testing.assert_close(y, x)
