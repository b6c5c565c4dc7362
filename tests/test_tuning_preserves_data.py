"""Tuning leaves every argument as one run would (issue 11, item 1), on every framework.

An auto-tuned in-place kernel (``z += x``) and one tensor passed as both
parameters: once tuning ran every configuration on the caller's tensors
(z = 3 after one call under the interpreter, 10776 on an H200).  Under the
interpreter the tuner runs nothing but the real launch; on a GPU
``tests/test_launch_gpu.py`` checks the same with the real space.  The
space has several configurations here, so a tuner that ran them would show.
"""

from __future__ import annotations

import numpy as np
import pytest

import ninetoothed
from ninetoothed import Tensor


def arrangement(z, x, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    return z.tile((BLOCK_SIZE,)), x.tile((BLOCK_SIZE,))


def application(z, x):
    z += x  # noqa: F841


@pytest.fixture
def kernel(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "4")
    made = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))
    assert len(made.generated.configurations) > 1
    return made


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "jit"])
def test_an_in_place_kernel_adds_once(framework, kernel, traced):
    if traced and framework.name != "jax":
        pytest.skip("jax.jit applies to JAX only")
    size = 300  # several programs of the chosen block size, a ragged last one
    z, x = (
        framework.from_numpy(np.zeros(size, np.float32)),
        framework.from_numpy(np.ones(size, np.float32)),
    )
    call = framework.jit_call if traced else framework.call
    (result,) = call(kernel, (z, x), {}, (0,))
    np.testing.assert_array_equal(result, np.ones(size, np.float32))


def test_one_tensor_as_both_parameters_doubles_once(framework, kernel):
    if framework.name == "jax":
        pytest.skip("JAX arrays are immutable: a repeated argument is two operands")
    w = framework.from_numpy(np.full(300, 3, np.float32))
    (result,) = framework.call(kernel, (w, w), {}, (0,))
    np.testing.assert_array_equal(result, np.full(300, 6, np.float32))
