"""A broadcast tile's fill select, left out where no store can see the lanes it fills."""

from __future__ import annotations

import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor
from ninetoothed.spec._build import build_spec
from nt_triton import _codegen as codegen

BLOCK_M = Symbol("BLOCK_M", meta=True)
BLOCK_N = Symbol("BLOCK_N", meta=True)
TILE = (BLOCK_M, BLOCK_N)


def source(arrangement, application) -> str:
    tensors = (Tensor(2), Tensor(shape=(1, None)), Tensor(2))
    spec = build_spec(application, tensors, tuple(arrangement(*tensors)))
    return codegen.generate(spec).source


def bias_as_output(x, bias, y):
    return x.tile(TILE), bias.expand_as(y).tile(TILE), y.tile(TILE)


def bias_as_input(x, bias, y):
    return x.tile(TILE), bias.expand((x.shape[0], -1)).tile(TILE), y.tile(TILE)


def add_bias(x, bias, y):
    y = ntl.cast(x, ntl.float32) + 2 * bias  # noqa: F841


def add_bias_through_a_local(x, bias, y):
    doubled = 2 * bias
    y = x + doubled  # noqa: F841


def test_a_bias_stored_under_its_own_row_bound_takes_no_select() -> None:
    """``bias.expand_as(y)``: its rows' bound is ``y``'s, which ``y``'s store masks
    with: the lanes past the rows are never stored, so they need no fill."""
    text = source(bias_as_output, add_bias)
    assert "ninetoothed_spread" not in text, text
    assert "bias_tile_" in text and "tl.broadcast_to(tl.load(bias_pointers_" in text, text


def test_a_select_stays_where_a_store_could_see_the_filled_lanes() -> None:
    """Expanded to ``x``'s rows, the bias's bound is not ``y``'s; read through a local,
    the analysis does not follow it: both keep the select."""
    assert "ninetoothed_spread(tl.load(bias_pointers_" in source(bias_as_input, add_bias)
    text = source(bias_as_output, add_bias_through_a_local)
    assert "ninetoothed_spread(tl.load(bias_pointers_" in text, text
