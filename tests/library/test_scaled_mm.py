"""``scaled_mm``: float8 products with tensor-wise and row-wise scales, on every framework,
against float64 of the dequantised inputs (and ``torch._scaled_mm`` itself).

Blocks are pinned to 16 on the CPU: (37, 70) x (70, 45) is 3 x 3 programs, each
walking 5 steps of k, the last ragged, and rows and columns past the edges.
Outputs are NaN-poisoned.  On the GPU the same tests run unpinned (one
configuration each); ``test_real_tuning_space_on_the_gpu`` tunes the whole space.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from support.base import ON_GPU
from support.library import assert_close, f64, random

from ninetoothed.library import mm
from ninetoothed.library.ops import kernels
from ninetoothed.library.ops.scaled import FLOAT8

M, K, N = 37, 70, 45


def float8(shape: tuple[int, ...]) -> np.ndarray:
    """Random float8_e4m3fn values (ml_dtypes' numpy dtype), about unit-scaled."""
    return (random(shape, "float32") * 2).astype(ml_dtypes.float8_e4m3fn)


def scales(rowwise: bool, m: int = M, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """float32 scales in [0.5, 1.5): one each, or (m, 1) and (1, n)."""
    rng = np.random.default_rng(7)
    a, b = ((m, 1), (1, n)) if rowwise else ((1,), ())
    return tuple(np.asarray(rng.random(shape) + 0.5, np.float32) for shape in (a, b))  # type: ignore[return-value]


def expected(a, b, scale_a, scale_b) -> np.ndarray:
    return (f64(a) * f64(scale_a).reshape(-1, 1)) @ (f64(b) * f64(scale_b).reshape(1, -1))


@pytest.mark.parametrize("rowwise", [False, True])
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
def test_scaled_products(framework, ops, rowwise, out_dtype):
    a, b = float8((M, K)), float8((K, N))
    scale_a, scale_b = scales(rowwise)
    given = [framework.from_numpy(t) for t in (a, b, scale_a, scale_b)]
    result = framework.to_numpy(ops.scaled_mm(*given, out_dtype=out_dtype))
    assert result.shape == (M, N)
    assert_close(result, expected(a, b, scale_a, scale_b), out_dtype, matrix=True)


@pytest.mark.parametrize("rowwise", [False, True])
def test_fast_accumulation(framework, ops, rowwise):
    """``use_fast_accum=True`` (torch's flag) runs its own kernel, the one that lets the
    tensor cores accumulate all of k; the default promotes each step to float32.  Both
    are exact to float32 here (the interpreter and short sums)."""
    a, b = float8((M, K)), float8((K, N))
    scale_a, scale_b = scales(rowwise)
    given = [framework.from_numpy(t) for t in (a, b, scale_a, scale_b)]
    want = expected(a, b, scale_a, scale_b)
    for fast in (False, True, False):
        result = framework.to_numpy(ops.scaled_mm(*given, out_dtype="float32", use_fast_accum=fast))
        assert_close(result, want, "float32", matrix=True)
    # The memo of the first call did not answer the second: both kernels exist.
    sources = [k.generated.source for k in kernels.made("scaled_mm")]
    promoted = ["max_num_imprecise_acc=" in source for source in sources]
    assert True in promoted and False in promoted


@pytest.mark.parametrize(("rowwise", "strided"), [(False, True), (True, False)])
def test_persistent_products(framework, ops, monkeypatch, rowwise, strided):
    """Outputs of at least ``mm.PERSISTENT_ELEMENTS`` take persistent programs (lowered
    here; 70 rows, as thin outputs keep their narrowed tiles: 5 x 3 pinned tiles walked
    by fewer programs under the interpreter)."""
    monkeypatch.setattr(mm, "PERSISTENT_ELEMENTS", 1)
    m = 70
    a, b = float8((m, K)), float8((K, N))
    scale_a, scale_b = scales(rowwise, m)
    given = framework.non_contiguous if strided else framework.from_numpy
    operands = [given(a), given(b)] + [framework.from_numpy(s) for s in (scale_a, scale_b)]
    result = framework.to_numpy(ops.scaled_mm(*operands, out_dtype="float32"))
    assert_close(result, expected(a, b, scale_a, scale_b), "float32", matrix=True)
    persistent = [k.spec.options.get("persistent") for k in kernels.made("scaled_mm")]
    assert True in persistent


@pytest.mark.parametrize(
    ("m", "k", "n", "rowwise"), [(0, 8, 5, True), (3, 0, 5, False), (1, 1, 1, True)]
)
def test_edge_shapes(framework, ops, m, k, n, rowwise):
    """No rows, an empty reduction (zeros), one element."""
    a, b = float8((m, k)), float8((k, n))
    scale_a, scale_b = scales(rowwise, m, n)
    given = [framework.from_numpy(t) for t in (a, b, scale_a, scale_b)]
    result = framework.to_numpy(ops.scaled_mm(*given, out_dtype="float32"))
    assert result.shape == (m, n)
    assert_close(result, expected(a, b, scale_a, scale_b), "float32", matrix=True)


def test_a_column_major_weight_and_the_default_output(framework, ops):
    """``mat2`` column-major, as ``torch._scaled_mm`` wants it; bfloat16 by default."""
    a, b = float8((M, K)), float8((K, N))
    scale_a, scale_b = scales(True)
    given = [framework.from_numpy(a), framework.non_contiguous(b)]
    given += [framework.from_numpy(s) for s in (scale_a, scale_b)]
    result = ops.scaled_mm(*given)
    assert "bfloat16" in str(result.dtype)
    assert_close(framework.to_numpy(result), expected(a, b, scale_a, scale_b), "bfloat16", True)


@pytest.mark.parametrize("rowwise", [False, True])
def test_torch_s_own_scaled_mm_agrees(rowwise):
    """The semantics are ``torch._scaled_mm``'s: same inputs, same result (float32 out)."""
    import torch

    from nt_torch import ops

    device = "cuda" if ON_GPU else "cpu"
    # torch's GPU kernel takes multiples of 16 only (K and N; M too, row-wise).
    m, k, n = (48, 80, 32) if ON_GPU else (M, K, N)
    a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
    w = torch.randn(n + 3, k, device=device).to(torch.float8_e4m3fn)[:n]  # b = w.T
    scale_a, scale_b = (torch.from_numpy(s).to(device) for s in scales(rowwise, m, n))
    if not rowwise:
        scale_a, scale_b = scale_a.reshape(()), scale_b.reshape(())
    for fast in (False, True):
        arguments = (a, w.t(), scale_a, scale_b)
        theirs = torch._scaled_mm(*arguments, out_dtype=torch.float32, use_fast_accum=fast)
        ours = ops.scaled_mm(*arguments, out_dtype=torch.float32, use_fast_accum=fast)
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_bad_arguments_are_named(framework, ops):
    a, b = (framework.from_numpy(float8(s)) for s in ((M, K), (K, N)))
    one, rows = framework.from_numpy(np.ones(1, "float32")), scales(True)
    row_a, column_b = framework.from_numpy(rows[0]), framework.from_numpy(rows[1])
    half = framework.from_numpy(np.ones((M, K), "float16"))
    calls = [
        (lambda: ops.scaled_mm(half, b, one, one), "scaled_mm: input must be float8_e4m3fn"),
        (
            lambda: ops.scaled_mm(a, a, one, one),
            r"cannot multiply shapes \(37, 70\) and \(37, 70\)",
        ),
        (lambda: ops.scaled_mm(a, b, row_a, one), r"got \(37, 1\) and \(1,\)"),
        (lambda: ops.scaled_mm(a, b, column_b, row_a), "or shapes \\(37, 1\\) and \\(1, 45\\)"),
        (
            lambda: ops.scaled_mm(a, b, framework.from_numpy(np.ones(1, "float16")), one),
            "scale_a must be float32, got float16",
        ),
        (lambda: ops.scaled_mm(a, b, one, one, out_dtype="int8"), "out_dtype must be one of"),
        (
            lambda: ops.scaled_mm(a, b, one, one, use_fast_accum="yes"),
            "scaled_mm: use_fast_accum must be a bool, got str",
        ),
    ]
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()


def test_the_operand_dtype_is_torch_s_float8():
    import torch

    assert str(torch.float8_e4m3fn) == f"torch.{FLOAT8}"


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="tunes the real space: GPU only")
def test_real_tuning_space_on_the_gpu(monkeypatch, tmp_path):
    """Every configuration of the space compiles, runs and the chosen one is right (the
    GPU suite otherwise limits kernels to one configuration)."""
    import torch

    import ninetoothed
    from ninetoothed.library import scaled_mm

    monkeypatch.delenv("NINETOOTHED_MAX_NUM_CONFIGS", raising=False)
    monkeypatch.setenv("NINETOOTHED_TUNING", "on")
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    assert "NINETOOTHED_MAX_NUM_CONFIGS" not in os.environ
    # (rowwise, persistent, fast accumulation): each value of each with each other's.
    variants = [(0, 0, 0), (1, 0, 1), (1, 1, 0), (0, 1, 1)]
    for rowwise, persistent, fast in (tuple(map(bool, v)) for v in variants):
        premade = scaled_mm.premake(rowwise=rowwise, persistent=persistent, fast_accum=fast)
        kernel = ninetoothed.make(
            premade.arrangement, premade.application, premade.tensors, **premade.options
        )
        assert len(kernel.generated.configurations) >= 4
        assert bool(kernel.spec.options.get("persistent")) == persistent
        m, k, n = 1000, 2048, 1536
        a, b = float8((m, k)), float8((n, k))
        scale_a, scale_b = scales(rowwise, m, n)
        scale_a, scale_b = scale_a.reshape(-1, 1), scale_b.reshape(1, -1)
        tensors = [torch.from_numpy(t.astype(np.float32)).cuda() for t in (a, b)]
        a_t, b_t = tensors[0].to(torch.float8_e4m3fn), tensors[1].to(torch.float8_e4m3fn).t()
        scale_a_t, scale_b_t = (torch.from_numpy(s).cuda() for s in (scale_a, scale_b))
        output = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        kernel(a_t, b_t, scale_a_t, scale_b_t, output)
        want = expected(a, b.T, scale_a, scale_b)
        assert_close(output.float().cpu().numpy(), want, "bfloat16", matrix=True)
