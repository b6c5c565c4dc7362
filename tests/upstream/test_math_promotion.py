"""``ntl.exp`` and ``ntl.exp2`` of float16 and bfloat16 tiles, as newer upstream computes them.

Newer upstream (its ``tests/test_math_dtype_promotion.py``) converts a float16
or bfloat16 operand of ``exp``/``exp2`` to float32 first and keeps the float32
result (a store converts it to the output's dtype); float32 and float64
operands are left alone.  Triton itself takes float32 and float64 only.
"""

import os

import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"

ROWS = Symbol("ROWS", constexpr=True)
COLUMNS = Symbol("COLUMNS", constexpr=True)


def tiles(x, y):
    return x.tile((ROWS, COLUMNS)), y.tile((ROWS, COLUMNS))


def exp_application(x, y):
    y = ntl.exp(x)  # noqa: F841


def exp2_application(x, y):
    y = ntl.exp2(x)  # noqa: F841


def scaled_exp_application(x, y):
    # The float32 result meets the float16 tile: float32 arithmetic, as upstream.
    y = ntl.exp(x) * x  # noqa: F841


APPLICATIONS = {
    "exp": (exp_application, torch.exp),
    "exp2": (exp2_application, torch.exp2),
    "exp times x": (scaled_exp_application, lambda x: torch.exp(x) * x),
}


def _input(dtype: torch.dtype) -> torch.Tensor:
    # 37 x 50 with 8 x 16 tiles: 5 x 4 programs, ragged in both dimensions.
    return (torch.rand(37, 50, device=DEVICE) * 8 - 4).to(dtype)


@pytest.mark.parametrize("name", APPLICATIONS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_exponentials_of_every_float_dtype(name, dtype):
    application, reference = APPLICATIONS[name]
    kernel = ninetoothed.make(tiles, application, (Tensor(2), Tensor(2)))
    x = _input(dtype)
    y = torch.full_like(x, float("nan"))

    kernel(x, y, COLUMNS=16, ROWS=8)

    # Computed in float32 for the 16-bit types, in the input's own type otherwise.
    computed = x.double() if dtype == torch.float64 else x.float()
    torch.testing.assert_close(y, reference(computed).to(dtype))


@pytest.mark.parametrize("name", ["exp", "exp2"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_result_is_float32_not_rounded_back(name, dtype):
    """A float32 output holds the float32 result, not one rounded to the input's type."""
    application, reference = APPLICATIONS[name]
    kernel = ninetoothed.make(tiles, application, (Tensor(2), Tensor(2)))
    x = _input(dtype)
    y = torch.full(x.shape, float("nan"), device=DEVICE)

    kernel(x, y, ROWS=8, COLUMNS=16)

    torch.testing.assert_close(y, reference(x.float()), rtol=1e-6, atol=1e-6)
    # Rounded to float16 and back, the results would differ by up to 2^-11 relatively.
    assert not torch.equal(y, reference(x.float()).to(dtype).float())


def silu_application(x, y):
    y = x / (1 + ntl.exp(-x))  # noqa: F841


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_silu_without_casts(dtype):
    """SiLU as a half-precision model's kernel writes it, with no cast in it."""
    kernel = ninetoothed.make(tiles, silu_application, (Tensor(2), Tensor(2)))
    x = _input(dtype)
    y = torch.full_like(x, float("nan"))

    kernel(x, y, ROWS=8, COLUMNS=16)

    torch.testing.assert_close(y, torch.nn.functional.silu(x.float()).to(dtype))


def test_a_triton_language_exp_of_float16_is_triton_s_and_refused():
    """Only ``ninetoothed.language``'s exponentials promote: ``triton.language.exp``
    written in an application is Triton's own, which takes float32 and float64."""
    import triton.language as tl

    def application(x, y):
        y = tl.exp(x)  # noqa: F841

    x = _input(torch.float16)
    with pytest.raises(Exception, match="fp16"):
        kernel = ninetoothed.make(tiles, application, (Tensor(2), Tensor(2)))
        kernel(x, torch.empty_like(x), ROWS=8, COLUMNS=16)


def test_on_every_framework(framework):
    """The promotion is in the generated code, so every framework's call gets it."""
    kernel = ninetoothed.make(tiles, exp_application, (Tensor(2), Tensor(2)))
    x = (np.random.default_rng().random((37, 50)) * 8 - 4).astype(np.float16)
    args = [framework.from_numpy(x), framework.poisoned((37, 50), "float32")]

    (y,) = framework.call(kernel, args, {"ROWS": 8, "COLUMNS": 16}, outputs=[1])

    np.testing.assert_allclose(y, np.exp(x.astype(np.float32)), rtol=1e-6)
