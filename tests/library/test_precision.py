"""Float32 products follow the framework's setting (``ninetoothed.library.ops._precision``).

PyTorch computes float32 matrix products in float32 by default, JAX rounds them
to TF32 on recent GPUs by default, and either can be told otherwise; Triton
rounds float32 operands of ``tl.dot`` to TF32 unless told.  The ops that
multiply matrices take a kernel made with ``input_precision="ieee"`` where the
framework asks for float32 products, and their memo keys on the setting, so a
setting changed between calls takes effect at the next call.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from support.base import ON_GPU
from support.library import f64, random

import ninetoothed
from ninetoothed.library import mm as mm_kernel
from ninetoothed.library.ops import attention, matmul


@contextlib.contextmanager
def products(framework: Any, precision: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The framework told to compute float32 products as ``precision`` (``"ieee"`` or
    ``"tf32"``) for the block."""
    if framework.name == "torch":
        import torch

        matmul_settings = torch.backends.cuda.matmul
        before = matmul_settings.fp32_precision
        matmul_settings.fp32_precision = precision
        try:
            yield
        finally:
            matmul_settings.fp32_precision = before
    elif framework.name == "jax":
        import jax

        with jax.default_matmul_precision("float32" if precision == "ieee" else "tensorfloat32"):
            yield
    else:  # Paddle: its flag where it has one, else its cuBLAS switch
        import paddle

        try:
            before = paddle.get_flags(["FLAGS_cublas_allow_tf32"])
        except ValueError:
            core = paddle.base.core
            switch = core.get_cublas_switch()
            core.set_cublas_switch(precision == "tf32")
            with monkeypatch.context() as patch:
                patch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
                try:
                    yield
                finally:
                    core.set_cublas_switch(switch)
            return
        paddle.set_flags({"FLAGS_cublas_allow_tf32": precision == "tf32"})
        try:
            yield
        finally:
            paddle.set_flags(before)


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_the_framework_s_setting_is_read(framework, monkeypatch, precision):
    with products(framework, precision, monkeypatch):
        assert framework.ops.framework.float32_products() == precision


def test_torch_and_jax_defaults(framework):
    """PyTorch's default is float32 products; JAX's, TF32 (on recent GPUs)."""
    if framework.name == "paddle":
        pytest.skip("Paddle's default depends on its version (a flag since 3.3, a switch before)")
    expected = {"torch": "ieee", "jax": "tf32"}[framework.name]
    assert framework.ops.framework.float32_products() == expected


@pytest.mark.parametrize(
    ("module", "op"), [(matmul, "mm"), (matmul, "bmm"), (attention, "scaled_dot_product_attention")]
)
def test_a_changed_setting_takes_effect_at_the_next_call(framework, ops, monkeypatch, module, op):
    """Three calls under one setting (the third runs the memo's plan), then one under
    the other: that call asks for the other kernel instead of repeating the plan."""
    shapes = {
        "mm": [(20, 24), (24, 18)],
        "bmm": [(2, 20, 24), (2, 24, 18)],
        "scaled_dot_product_attention": [(1, 2, 20, 16)] * 3,
    }[op]
    arguments = [framework.from_numpy(random(shape, "float32")) for shape in shapes]
    asked: list[dict[str, Any]] = []
    original = module.kernel

    def kernel(kernel_module: Any, **variant: Any) -> Any:
        asked.append(variant)
        return original(kernel_module, **variant)

    monkeypatch.setattr(module, "kernel", kernel)
    with products(framework, "tf32", monkeypatch):
        for _ in range(3):
            getattr(ops, op)(*arguments)
    assert all("input_precision" not in variant for variant in asked)
    asked.clear()
    with products(framework, "ieee", monkeypatch):
        getattr(ops, op)(*arguments)
    assert asked and all(variant.get("input_precision") == "ieee" for variant in asked)


def test_lower_precisions_leave_the_kernels_as_they_were(framework, ops, monkeypatch):
    """Half-precision operands' products are the same either way: no second kernel."""
    asked: list[dict[str, Any]] = []
    original = matmul.kernel
    monkeypatch.setattr(matmul, "kernel", lambda m, **v: asked.append(v) or original(m, **v))
    a, b = (framework.from_numpy(random(s, "float16")) for s in [(20, 24), (24, 18)])
    with products(framework, "ieee", monkeypatch):
        ops.mm(a, b)
    assert asked and all("input_precision" not in variant for variant in asked)


def _mm(**options: Any) -> Any:
    arranged = functools.partial(mm_kernel.arrangement, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16)
    arranged = functools.partial(arranged, BLOCK_SIZE_K=16)
    tensors = tuple(ninetoothed.Tensor(2) for _ in range(3))
    return ninetoothed.make(arranged, mm_kernel.application, tensors, **options)


def test_make_writes_the_precision_into_every_dot_without_one():
    source = open(_mm(input_precision="ieee").source_path).read()
    dots = [line for line in source.splitlines() if "tl.dot(" in line]
    assert dots and all("input_precision='ieee'" in line for line in dots)
    plain = open(_mm().source_path).read()
    assert "input_precision" not in plain


def test_a_dot_that_names_its_precision_keeps_it():
    def application(input, other, output):
        accumulator = ninetoothed.language.zeros(output.shape, dtype=ninetoothed.language.float32)
        for k in range(input.shape[0]):
            accumulator += ninetoothed.language.dot(input[k], other[k], input_precision="tf32x3")
        output = accumulator  # noqa: F841

    arranged = functools.partial(
        mm_kernel.arrangement, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16
    )
    tensors = tuple(ninetoothed.Tensor(2) for _ in range(3))
    made = ninetoothed.make(arranged, application, tensors, input_precision="ieee")
    dots = [line for line in open(made.source_path).read().splitlines() if "tl.dot(" in line]
    assert dots and all("input_precision='tf32x3'" in line for line in dots)
    assert not any("'ieee'" in line for line in dots)


def test_an_unknown_precision_is_refused_at_make():
    with pytest.raises(ValueError, match="input_precision must be one of 'tf32', 'tf32x3', 'ieee'"):
        _mm(input_precision="fp32")


@pytest.mark.skipif(not ON_GPU, reason="the interpreter's products are float32 either way")
def test_float32_products_on_the_gpu(framework, ops, monkeypatch):
    """On the GPU: float32 products are float32 where the framework asks (relative error
    near float32's rounding), TF32 where it allows (about a thousand times more)."""
    a, b = random((300, 700), "float32"), random((700, 200), "float32")
    expected = f64(a) @ f64(b)
    errors = {}
    for precision in ("ieee", "tf32"):
        with products(framework, precision, monkeypatch):
            result = ops.mm(framework.from_numpy(a), framework.from_numpy(b))
        actual = np.asarray(framework.to_numpy(result), dtype=np.float64)
        errors[precision] = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
    assert errors["ieee"] < 1e-5, errors
    assert errors["tf32"] > 10 * errors["ieee"], errors
