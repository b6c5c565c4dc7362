"""How upstream programs declare symbols and call kernels.

Upstream's generated launch function is ``launch(<tensors>, <constexpr
symbols>)``: the parameters' tensors (named by ``Tensor(name=...)``), then
every constexpr symbol sorted by name, all positional-or-keyword; meta
symbols are not parameters (``generation.py: _generate_launch``).  A symbol
both ``meta`` and ``constexpr`` is a meta symbol (``symbol.py``, where a
meta name is a constexpr name too: ``naming.is_constexpr``).  The error
tests check our messages; upstream raises Python's own ``TypeError`` s there.
"""

import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"
RNG = np.random.default_rng()


def doubled(x, y):
    y = x * 2  # noqa: F841


def meta_constexpr_tiles(x, y):
    BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True, constexpr=True)
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def max_pool_arrangement(input, output):
    # Upstream's launch takes them sorted by name, whatever the order of declaration.
    WINDOW_WIDTH = Symbol("WINDOW_WIDTH", constexpr=True, upper_bound=16)
    WINDOW_HEIGHT = Symbol("WINDOW_HEIGHT", constexpr=True, upper_bound=16)
    BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True, lower_bound=16, upper_bound=32)
    input_arranged = input.tile((1, 1, WINDOW_HEIGHT, WINDOW_WIDTH)).ravel()
    input_arranged = input_arranged.flatten(end_dim=4).flatten(start_dim=1)
    input_arranged = input_arranged.tile((BLOCK_SIZE, -1))
    output_arranged = output.tile((1, 1, 1, 1)).ravel()
    output_arranged = output_arranged.flatten(end_dim=4).flatten(start_dim=1)
    output_arranged = output_arranged.tile((BLOCK_SIZE, -1))
    output_arranged.dtype = output_arranged.dtype.squeeze(1)
    return input_arranged, output_arranged


def max_pool_application(input, output):
    output = ntl.max(input, axis=1)  # noqa: F841


max_pool = ninetoothed.make(
    max_pool_arrangement,
    max_pool_application,
    (Tensor(4, other=float("-inf")), Tensor(4)),
)


def pool_inputs(window):
    input = torch.randn(2, 3, 10, 11, device=DEVICE)
    r, s = window
    shape = (2, 3, math.ceil((10 - r) / r + 1), math.ceil((11 - s) / s + 1))
    return input, torch.full(shape, float("nan"), device=DEVICE)


@pytest.mark.parametrize(
    "call",
    [
        lambda k, i, o, r, s: k(i, o, r, s),
        lambda k, i, o, r, s: k(i, o, r, WINDOW_WIDTH=s),
        lambda k, i, o, r, s: k(i, o, WINDOW_WIDTH=s, WINDOW_HEIGHT=r),
    ],
    ids=["positional", "mixed", "keyword"],
)
@pytest.mark.parametrize("window", [(2, 4), (4, 3)])
def test_constexpr_symbols_follow_the_tensors_sorted_by_name(call, window):
    input, output = pool_inputs(window)

    call(max_pool, input, output, *window)

    torch.testing.assert_close(output, F.max_pool2d(input, window, ceil_mode=True))


def scale_and_shift(x, y):
    # x.shape is the declared tile size (upstream): ROWS x COLUMNS.
    y = x * x.shape[0] - x.shape[1]  # noqa: F841


def named_tiles(inp, out):
    # Positionally sorted by name: COLUMNS, then ROWS (not the order of use).
    ROWS = Symbol("ROWS", constexpr=True)
    COLUMNS = Symbol("COLUMNS", constexpr=True)
    return inp.tile((ROWS, COLUMNS)), out.tile((ROWS, COLUMNS))


named = ninetoothed.make(
    named_tiles, scale_and_shift, (Tensor(2, name="inp"), Tensor(2, name="out"))
)


@pytest.mark.parametrize(
    "call",
    [
        lambda x, y: named(x, y, 4, 2),
        lambda x, y: named(x, y, 4, ROWS=2),
        lambda x, y: named(x, out=y, ROWS=2, COLUMNS=4),
        lambda x, y: named(out=y, inp=x, COLUMNS=4, ROWS=2),
    ],
    ids=["positional", "mixed", "one-tensor-by-name", "all-by-name"],
)
def test_tensors_may_be_given_by_their_names(call):
    x = torch.randn(6, 10, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    call(x, y)

    torch.testing.assert_close(y, x * 2 - 4)


def centred_rows(x, y):
    WIDTH = Symbol("WIDTH", constexpr=True)
    return x.tile((1, WIDTH)), y.tile((1, WIDTH))


def centre(x, y):
    y = x - ntl.sum(x, 1)[:, None] / x.shape[-1]  # noqa: F841


def centre_with_a_positional_width(framework, call):
    kernel = ninetoothed.make(centred_rows, centre, (Tensor(2), Tensor(2)))
    x = RNG.standard_normal((5, 24)).astype(np.float32)
    args = [framework.from_numpy(x), framework.poisoned((5, 24), "float32"), 24]
    (y,) = call(kernel, args, {}, outputs=[1])
    np.testing.assert_allclose(y, x - x.mean(1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_a_positional_constexpr_on_every_framework(framework):
    centre_with_a_positional_width(framework, framework.call)


def test_a_positional_constexpr_under_jax_jit():
    pytest.importorskip("jax")
    from support.jax_support import JaxSupport

    jax = JaxSupport()
    centre_with_a_positional_width(jax, jax.jit_call)


def test_too_many_positional_arguments_name_the_signature():
    input, output = pool_inputs((2, 2))
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"kernel 'max_pool_application' \(\w+\.py:\d+\) takes 2 parameters "
        r"\(input, output\) and then its constexpr symbols \(WINDOW_HEIGHT, WINDOW_WIDTH\), "
        r"at most 4 positional arguments, got 5",
    ):
        max_pool(input, output, 2, 2, 2)


def test_a_kernel_without_constexpr_symbols_takes_its_parameters_only():
    kernel = ninetoothed.make(meta_constexpr_tiles, doubled, (Tensor(1), Tensor(1)))
    x = torch.randn(8, device=DEVICE)
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"kernel 'doubled' \(test_call_forms\.py:\d+\) takes 2 positional arguments "
        r"\(x, y\), got 3 \(it has no constexpr",
    ):
        kernel(x, x, 64)


def test_a_value_given_positionally_and_by_keyword_is_refused():
    input, output = pool_inputs((2, 2))
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"got two values for constexpr symbol 'WINDOW_WIDTH': 2 positionally "
        r"\(argument 3\) and 3 by keyword",
    ):
        max_pool(input, output, 2, 2, WINDOW_WIDTH=3)


def test_a_tensor_given_positionally_and_by_name_is_refused():
    x = torch.randn(6, 10, device=DEVICE)
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"got two values for parameter 'x' \(by keyword: 'inp', its Tensor's name\): "
        r"a torch.Tensor positionally \(argument 0\) and a torch.Tensor by keyword",
    ):
        named(x, x, inp=x, ROWS=2, COLUMNS=4)


def test_a_missing_tensor_among_named_ones_is_named():
    x = torch.randn(6, 10, device=DEVICE)
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"kernel 'scale_and_shift' \(\w+\.py:\d+\): missing parameter 'y' \(by keyword: "
        r"'out', its "
        r"Tensor's name\); the parameters are "
        r"inp, out, given positionally or by keyword",
    ):
        named(inp=x, ROWS=2, COLUMNS=4)
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"takes 2 positional arguments \(x, y\), got 0; missing parameters 'x', 'y'",
    ):
        named(ROWS=2, COLUMNS=4)


def test_a_missing_constexpr_says_how_to_give_it():
    input, output = pool_inputs((2, 2))
    with pytest.raises(
        ninetoothed.errors.LaunchError,
        match=r"missing constexpr symbol\(s\) WINDOW_WIDTH: constexpr symbols are given after "
        r"the parameters, positionally \(in the order WINDOW_HEIGHT, WINDOW_WIDTH\) or by "
        r"keyword; e.g. max_pool_application\(\.\.\., WINDOW_WIDTH=\.\.\.\)",
    ):
        max_pool(input, output, 2)


def test_a_meta_constexpr_symbol_is_not_given_positionally():
    # Upstream's launch has no parameter for it; here it may be pinned by keyword only.
    kernel = ninetoothed.make(meta_constexpr_tiles, doubled, (Tensor(1), Tensor(1)))
    x = torch.randn(100, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    kernel(x, y, BLOCK_SIZE=32)
    torch.testing.assert_close(y, x * 2)
    with pytest.raises(
        ninetoothed.errors.LaunchError, match=r"takes 2 positional arguments \(x, y\), got 3"
    ):
        kernel(x, y, 32)
