"""Grouped program order: a one-to-one map, and picked only for product-like kernels."""

from __future__ import annotations

import ast
import itertools

import pytest

from nt_triton._codegen import naming, ordering


def run_decomposition(program_id: int, rows: int, columns: int, outer: bool) -> tuple[int, int]:
    """The grouped statements executed in Python, ``tl.minimum`` being ``min``."""
    scope: dict[str, object] = {
        "tl": type("tl", (), {"minimum": staticmethod(min)}),
        naming.PROGRAM_ID: program_id,
        "rows": rows,
        "columns": columns,
    }
    from ninetoothed.arrangement.symbol import Symbol

    statements = ordering.grouped_decomposition(
        Symbol(naming.PROGRAM_ID), Symbol("rows"), Symbol("columns"), outer
    ) + ordering.grouped_indices(0, 1)
    for statement in statements:
        exec(statement, scope)  # noqa: S102 - the generated statements themselves
    return int(scope[naming.grid_index(0)]), int(scope[naming.grid_index(1)])  # type: ignore[call-overload]


@pytest.mark.parametrize(("rows", "columns"), [(1, 5), (3, 3), (8, 2), (10, 3), (17, 4), (9, 1)])
@pytest.mark.parametrize("outer", [False, True])
def test_grouped_order_gives_every_tile_to_exactly_one_program(rows, columns, outer):
    batches = 3 if outer else 1
    seen = [run_decomposition(pid, rows, columns, outer) for pid in range(batches * rows * columns)]
    for batch in range(batches):
        chunk = seen[batch * rows * columns : (batch + 1) * rows * columns]
        assert sorted(chunk) == sorted(itertools.product(range(rows), range(columns)))
    if rows > 1 and columns > 1:
        assert seen[:2] == [(0, 0), (1, 0)]  # down the group first, not along the row


LOOP_OF_DOT = ast.parse("for k in range(n):\n    acc += tl.dot(a, b)\n").body
NO_DOT = ast.parse("for k in range(n):\n    acc += a * b\n").body


def test_products_are_grouped():
    reads = {"a": {0}, "b": {1}, "c": {0, 1}}
    assert ordering.grouped_dims(["m", "n"], reads, LOOP_OF_DOT) == (0, 1)
    assert ordering.grouped_dims(
        ["batch", "m", 1, "n"], {"a": {0, 1}, "b": {0, 3}}, LOOP_OF_DOT
    ) == (1, 3)


def test_attention_elementwise_and_one_dimensional_grids_keep_row_major_order():
    attention = {"q": {0, 1, 2}, "k": {0, 1}, "v": {0, 1}, "o": {0, 1, 2}}
    assert ordering.grouped_dims(["b", "h", "m"], attention, LOOP_OF_DOT) is None
    assert ordering.grouped_dims(["m", "n"], {"a": {0}, "b": {1}}, NO_DOT) is None
    assert ordering.grouped_dims(["m", 1], {"a": {0}, "b": {1}}, LOOP_OF_DOT) is None
