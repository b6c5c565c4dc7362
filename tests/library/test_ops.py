"""The ops' surface: the same names everywhere, documented, made once, usable under jax.jit."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from support.library import assert_close, f64, random

from ninetoothed.library import made_kernels, pinned_block_sizes
from ninetoothed.library.ops import OPERATIONS


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
    from support.base import ON_GPU

    from nt_torch import ops  # a kernel made for one framework serves every framework

    device = "cuda" if ON_GPU else "cpu"
    with pinned_block_sizes(32):
        ops.add(torch.ones(3, device=device), torch.ones(3, device=device))
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
    from ninetoothed.library.ops.kernels import _options

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "1")
    assert _options({"max_num_configs": 16, "num_warps": 4}) == {
        "max_num_configs": 1,
        "num_warps": 4,
    }
    monkeypatch.setenv("NINETOOTHED_MAX_NUM_CONFIGS", "64")
    assert _options({"max_num_configs": 16})["max_num_configs"] == 16
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _options({"max_num_configs": 16}) == {}


def _bad_calls(framework, ops):
    """(call, what the error must say) for each op's typical mistake."""

    def t(*shape, dtype="float32"):
        return framework.from_numpy(random(shape, dtype))

    x = t(4, 4)
    return [
        (lambda: ops.mm([1.0], x), r"mm: input must be a \w+ tensor, got list"),
        (lambda: ops.mm(x, t(4, 4, dtype="float16")), r"mm: .*one dtype.*mat2 float16"),
        (lambda: ops.bmm(x, x), r"bmm: input must be 3-D, got shape \(4, 4\)"),
        (lambda: ops.addmm(t(3), x, x), r"addmm: .*\(3,\).*\(4, 4\)"),
        (lambda: ops.conv2d(t(1, 3, 5, 5), t(2, 1, 3, 3)), "conv2d: input has 3 channels"),
        (lambda: ops.conv2d(t(1, 1, 5, 5), t(1, 1, 3, 3), stride=0), "conv2d: stride"),
        (lambda: ops.softmax(x, dim=2), r"softmax: dim 2 is out of range for shape \(4, 4\)"),
        (lambda: ops.rms_norm(x, t(3)), r"rms_norm: weight must have shape \(4,\), got \(3,\)"),
        (lambda: ops.fused_add_rms_norm(x, t(4, 2), t(4)), r"residual must have .*\(4, 2\)"),
        (lambda: ops.rotary_position_embedding(t(1, 2, 3, 8), t(2, 3), t(2, 4)), r"\(2, 4\)"),
        (lambda: ops.scaled_dot_product_attention(x, x, x), "query must be 4-D"),
        (lambda: ops.max_pool2d(t(1, 1, 4, 4), 3, padding=2), "padding at most half"),
        (lambda: ops.silu(t(3, dtype="int32")), "silu: .*input int32"),
        (lambda: ops.swiglu(x, t(3)), "swiglu: shapes .* do not broadcast"),
    ]


def test_bad_arguments_are_named(framework):
    """Every op refuses a typical mistake with the op, the argument and the values."""
    calls = _bad_calls(framework, framework.ops)
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("gqa", [False, True])
@pytest.mark.parametrize("few_queries", [False, True])
def test_every_sdpa_variant_has_a_configuration_that_fits_a_gpu(monkeypatch, gqa, few_queries):
    """Sized for a GPU (not the interpreter), each variant keeps a configuration that
    fits a program with the head dimension at its bound: the decoding variant's
    16 x 64 blocks fit none, and its first call on the GPU refused to make it."""
    import ninetoothed
    from ninetoothed.library import scaled_dot_product_attention as sdpa

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    premade = sdpa.premake(gqa=gqa, few_queries=few_queries)
    kernel = ninetoothed.make(
        premade.arrangement, premade.application, premade.tensors, **premade.options
    )
    assert kernel.generated.configurations
