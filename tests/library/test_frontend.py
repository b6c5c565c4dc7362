"""The ops' surface: the same names everywhere, documented, made once, usable under jax.jit."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from support.library import assert_close, f64, random

from ninetoothed.library import made_kernels, pinned_block_sizes
from ninetoothed.library.frontend import OPERATIONS


def test_every_framework_has_every_op_documented(framework):
    module = framework.ops
    assert sorted(module.__all__) == sorted(OPERATIONS)
    for name in OPERATIONS:
        op = getattr(module, name)
        assert op.__doc__ and len(op.__doc__) > 80, f"{name} documents too little"
        assert "framework" not in inspect.signature(op).parameters
        assert op.__module__ == module.__name__


def test_a_variant_is_made_once(framework, ops):
    x = framework.from_numpy(random((4, 8), "float32"))
    ops.silu(x)
    before = len(made_kernels("silu"))
    ops.silu(framework.from_numpy(random((6, 8), "float32")))
    assert len(made_kernels("silu")) == before


def test_pinned_kernels_tune_nothing():
    import torch

    from nt_torch import ops  # a kernel made for one framework serves every framework

    with pinned_block_sizes(32):
        ops.add(torch.ones(3), torch.ones(3))
    kernel = made_kernels("add")[-1]
    assert not kernel.spec.meta_symbols
    assert "tl.arange(0, 32)" in kernel.source


def test_jax_ops_under_jit():
    jax = pytest.importorskip("jax")
    from nt_jax import ops

    a, b = random((19, 24), "float32"), random((24,), "float32")
    with pinned_block_sizes(16):
        added = jax.jit(ops.add)(jax.numpy.asarray(a), jax.numpy.asarray(b))
        normalised, total = jax.jit(ops.fused_add_rms_norm)(
            jax.numpy.asarray(a), jax.numpy.asarray(a), jax.numpy.asarray(b)
        )
    assert_close(np.asarray(added), f64(a) + f64(b), "float32")
    assert_close(np.asarray(total), 2 * f64(a), "float32")
    assert normalised.shape == a.shape


def test_the_environment_caps_the_configurations_tried(monkeypatch):
    """The GPU tests' NINETOOTHED_MAX_NUM_CONFIGS=1 lowers the GEMMs' 16; under the
    interpreter the limit goes (the code generator's default applies)."""
    from ninetoothed.library.frontend.kernels import _options

    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1")
    assert _options({"max_num_configs": 16, "num_warps": 4}) == {
        "max_num_configs": 1,
        "num_warps": 4,
    }
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "64")
    assert _options({"max_num_configs": 16})["max_num_configs"] == 16
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _options({"max_num_configs": 16}) == {}
