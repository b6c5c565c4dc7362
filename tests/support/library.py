"""Inputs and comparisons of the kernel library's tests.

Inputs are drawn in float64, rounded to the dtype under test, and the
reference is computed in float64 from the rounded values, so the tolerance
measures the kernel's own rounding: relative error (Frobenius norm) below
:func:`tolerance`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from support.base import ON_GPU

DTYPES = ["float16", "bfloat16", "float32"]

RNG = np.random.default_rng(2024)


def rounded(array: np.ndarray, dtype: str) -> np.ndarray:
    """``array`` rounded to ``dtype`` (ml_dtypes' bfloat16 for bfloat16)."""
    if dtype == "bfloat16":
        import ml_dtypes

        return array.astype(ml_dtypes.bfloat16)
    return array.astype(dtype)


def random(shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> np.ndarray:
    """Standard normal values times ``scale``, rounded to ``dtype``."""
    return rounded(RNG.standard_normal(shape) * scale, dtype)


def tolerance(dtype: str, matrix: bool = False) -> float:
    """What a kernel computing in float32 and rounding once may err by, relatively.

    Float32 products use TF32 on the GPU (about 1e-3).
    """
    if dtype == "bfloat16":
        return 2e-2
    if dtype == "float16":
        return 5e-3
    return 2e-3 if matrix and ON_GPU else 1e-5


def assert_close(actual: Any, expected: np.ndarray, dtype: str, matrix: bool = False) -> None:
    """``actual`` (numpy) matches the float64 ``expected``, with no NaN left."""
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == expected.shape, f"shape {actual.shape}, expected {expected.shape}"
    assert not np.isnan(actual).any(), "NaN left in the output (an element never written?)"
    norm = np.linalg.norm(expected)
    error = float(np.linalg.norm(actual - expected) / (norm if norm else 1.0))
    assert error < tolerance(dtype, matrix), f"relative error {error:.3g} ({dtype})"


def f64(array: np.ndarray) -> np.ndarray:
    """``array`` in float64."""
    return np.asarray(array, dtype=np.float64)


def conv2d(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1)) -> np.ndarray:
    """Cross-correlation in float64, straight from the definition."""
    x = np.pad(f64(x), ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    (n, _, h, width), (k, _, r, s) = x.shape, w.shape
    p = (h - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q = (width - dilation[1] * (s - 1) - 1) // stride[1] + 1
    output = np.zeros((n, k, p, q))
    for i in range(r):
        for j in range(s):
            rows = slice(i * dilation[0], i * dilation[0] + stride[0] * (p - 1) + 1, stride[0])
            columns = slice(j * dilation[1], j * dilation[1] + stride[1] * (q - 1) + 1, stride[1])
            output += np.einsum("nchw,kc->nkhw", x[:, :, rows, columns], f64(w[:, :, i, j]))
    return output


def attention(q, k, v, causal: bool, scale: float) -> np.ndarray:
    """Softmax attention in float64; key/value heads repeated for grouped queries."""
    group = q.shape[1] // k.shape[1]
    k, v = (np.repeat(f64(t), group, axis=1) for t in (k, v))
    scores = f64(q) @ np.swapaxes(k, -1, -2) * scale
    if causal:  # top-left aligned, as torch's is_causal
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True) @ v


def binds_on_this_triton() -> bool:
    """Whether a memo plan's site binds the Gluon kernels' launch here (``nt_torch.hopper.
    Binding``): the lean launcher lays tensor maps out as Triton 3.6 passes them, where it
    can be built and load the driver, and no profiler hooks Triton's launches."""
    from nt_triton._launch import compiled, lean

    return (
        compiled.triton_version() == (3, 6)
        and lean.extension() is not None
        and not lean.hooks_registered()
    )
