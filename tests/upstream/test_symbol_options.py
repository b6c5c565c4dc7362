"""Upstream's ``Symbol`` options.

``Symbol(expr, constexpr=None, meta=None, lower_bound=None, upper_bound=None,
power_of_two=None)``: every option positional-or-keyword; ``meta=True`` with
``constexpr=True`` is a meta symbol (upstream's meta names are constexpr
names too: ``naming.is_constexpr``), auto-tuned and not given by the caller.
"""

import os

import torch

import ninetoothed
from ninetoothed import Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def doubled(x, y):
    y = x * 2  # noqa: F841


def meta_constexpr_tiles(x, y):
    BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True, constexpr=True)
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))


def test_a_meta_constexpr_symbol_is_auto_tuned():
    kernel = ninetoothed.make(meta_constexpr_tiles, doubled, (Tensor(1), Tensor(1)))
    x = torch.randn(1000, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y)

    torch.testing.assert_close(y, x * 2)


BLOCK = Symbol("BLOCK", constexpr=True, meta=True, lower_bound=32, upper_bound=64)


@ninetoothed.jit
def scale_kernel(x: Tensor(1).tile((BLOCK,)), y: Tensor(1).tile((BLOCK,))):
    y = x * 2  # noqa: F841


def test_a_meta_constexpr_symbol_in_a_jit_annotation():
    x = torch.randn(333, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    scale_kernel(x, y)

    torch.testing.assert_close(y, x * 2)


def positional_options(x, y):
    # Symbol(expr, constexpr, meta, lower_bound, upper_bound, power_of_two)
    COLUMNS = Symbol("COLUMNS", True, None, 1, 16)
    ROWS = Symbol("ROWS", None, True, 16, 64, True)
    return x.tile((ROWS, COLUMNS)), y.tile((ROWS, COLUMNS))


def test_symbol_options_may_be_positional_in_upstreams_order():
    kernel = ninetoothed.make(positional_options, doubled, (Tensor(2), Tensor(2)))
    x = torch.randn(50, 30, device=DEVICE)
    y = torch.full_like(x, float("nan"))

    kernel(x, y, COLUMNS=8)  # a constexpr; ROWS is tuned

    torch.testing.assert_close(y, x * 2)
