"""``min``/``max`` and ``and``/``or``/``not`` in applications mean what Triton compiles.

Upstream programs write ReLU as ``max(0.0, x)`` (ntops's ``relu``, ``celu``)
and ``isinf`` as ``a == inf or a == -inf``.  Triton's compiler makes these
``tl.maximum`` and ``logical_or``; its interpreter ran them as Python, which
compares tensors by truth value: the CPU results were silently wrong.  These
run the same kernels on each framework's device (the interpreter on the CPU)
against numpy's results, with several programs per call.
"""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest
import torch

import ninetoothed
from ninetoothed import Tensor
from nt_triton import _interpreted_semantics

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"
BLOCK = 8
N = 3 * BLOCK + 5  # four programs, the last ragged


def tiles(x, y, out):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), out.tile((BLOCK,))


def relu_like(x, y, out):
    out = max(0.0, x) + min(0.0, y)  # noqa: F841


def three_way(x, y, out):
    out = max(x, y, 0.5) - min(x, -0.5, y)  # noqa: F841


def either_infinite(x, y, out):
    out = x == float("inf") or y == float("-inf")  # noqa: F841


def both_positive(x, y, out):
    out = x > 0 and y > 0  # noqa: F841


def not_positive(x, y, out):
    out = not x > 0  # noqa: F841


def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng()
    x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    x[3], y[5], x[N - 1] = np.inf, -np.inf, -np.inf
    return x, y


CASES = {
    relu_like: lambda x, y: np.maximum(x, 0) + np.minimum(y, 0),
    three_way: lambda x, y: np.maximum(np.maximum(x, y), 0.5) - np.minimum(np.minimum(x, -0.5), y),
    either_infinite: lambda x, y: ((x == np.inf) | (y == -np.inf)).astype(np.float32),
    both_positive: lambda x, y: ((x > 0) & (y > 0)).astype(np.float32),
    not_positive: lambda x, y: (~(x > 0)).astype(np.float32),
}


@pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")  # Triton's, compiling these
@pytest.mark.parametrize("application", list(CASES), ids=lambda f: f.__name__)
def test_builtins_and_boolean_operators_on_tiles(framework, application):
    kernel = ninetoothed.make(tiles, application, (Tensor(1), Tensor(1), Tensor(1)))
    x, y = inputs()
    (out,) = framework.call(
        kernel,
        [framework.from_numpy(x), framework.from_numpy(y), framework.poisoned((N,), "float32")],
        {},
        outputs=[2],
    )
    np.testing.assert_array_equal(out, CASES[application](x, y))


def rows(x, out, flag):
    return x.tile((BLOCK,)), out.tile((BLOCK,)), flag


def compile_time_flag(x, out, flag):
    # ``flag`` is a constexpr: ``or``/``and`` stop at it as the compiler does (the
    # missing attribute is never read), and ``max`` of numbers stays a number.
    if flag:
        if flag or x.missing_attribute:
            out = x * max(2, 3)  # noqa: F841
    elif flag and x.missing_attribute:
        out = x  # noqa: F841
    else:
        out = -x if not flag else x  # noqa: F841


@pytest.mark.parametrize("flag", [True, False])
def test_compile_time_values_keep_python_meaning(flag):
    kernel = ninetoothed.make(
        rows, compile_time_flag, (Tensor(1), Tensor(1), Tensor(0, constexpr=True))
    )
    x = torch.randn(N, device=DEVICE)
    out = torch.full((N,), float("nan"), device=DEVICE)
    kernel(x, out, flag)
    torch.testing.assert_close(out, x * 3 if flag else -x)


def test_a_local_min_is_left_alone():
    tree = ast.parse("def f(x, min):\n    return min(x, 1) + max(x, 2)\n")
    text = ast.unparse(_interpreted_semantics.rewrite(tree))
    assert "min(x, 1)" in text
    assert f"{_interpreted_semantics.MAX}(x, 2)" in text


def test_a_walrus_operand_is_left_alone():
    tree = ast.parse("def f(x):\n    return (y := x) or y\n")
    text = ast.unparse(_interpreted_semantics.rewrite(tree))
    assert "(y := x) or y" in text
