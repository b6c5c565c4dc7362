"""Index arithmetic per element (``nt_triton._codegen.separable``): an implicit GEMM's
offsets and masks summed per tile dimension, and mask terms that always hold dropped."""

from __future__ import annotations

import ast

import ninetoothed
from ninetoothed import Symbol
from nt_triton._codegen import separable


def _statement(source: str, stem: str) -> ast.expr:
    """The value of the generated statement ``stem_N = ...``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id.startswith(stem):
                return node.value
    raise AssertionError(f"no {stem} in the source")


def _operands(node: ast.expr, op: type) -> list[ast.expr]:
    """The operands of a left-nested chain of ``op``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, op):
        return [*_operands(node.left, op), node.right]
    return [node]


def _aranges(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and "_arange_" in n.id}


def _conv2d_source(**options: object) -> str:
    from ninetoothed.library import conv2d

    premade = conv2d.premake(**options)  # type: ignore[arg-type]
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    return str(kernel.source)


def test_an_implicit_gemm_adds_its_offsets_and_masks_once_per_element():
    """The input window's row ``p + r`` mixes the tile's rows (output positions) and
    columns (filter taps): the offsets are a column vector plus a row vector, the mask
    a column vector and a row vector, and no input row or column is checked against
    the input's size (the window stays inside without padding)."""
    source = _conv2d_source()
    pointers = _statement(source, "input_pointers")
    assert isinstance(pointers, ast.BinOp) and isinstance(pointers.right, ast.BinOp)
    rows, columns = pointers.right.left, pointers.right.right
    assert _aranges(rows) == {"input_arange_2_0"}
    assert _aranges(columns) == {"input_arange_2_1"}
    mask = _operands(_statement(source, "input_mask"), ast.BitAnd)
    assert [len(_aranges(term)) for term in mask] == [1, 1, 1]
    assert "input_size_2" not in ast.unparse(mask[-1]) and "< input_size_3" not in source
    # The filter's (c, r, s) all run along the tile's rows: summed before broadcasting.
    filter_pointers = _statement(source, "other_pointers")
    assert isinstance(filter_pointers, ast.BinOp)
    sums = _operands(filter_pointers.right, ast.Add)
    assert [_aranges(term) for term in sums[1:]] == [
        {"other_arange_2_0"},
        {"other_arange_2_1"},
    ]


def test_padding_keeps_the_checks_it_needs():
    """With padding the window leaves the input: its rows and columns are checked
    (both ends), after the checks of one tile dimension each."""
    source = _conv2d_source(padding=(1, 1))
    mask = _operands(_statement(source, "input_mask"), ast.BitAnd)
    mixed = [ast.unparse(term) for term in mask if len(_aranges(term)) == 2]
    assert mixed and len(_aranges(mask[0])) == 1
    assert any("< input_size_2" in term for term in mixed)
    assert any(">= 0" in term for term in mixed)


def test_a_sum_of_remainders_is_below_the_sum_of_the_divisors():
    p, q, r = Symbol("p"), Symbol("q"), Symbol("r")
    size, taps = Symbol("P"), Symbol("R")
    window = p % size + q % taps
    assert separable.below(window, size + taps - 1)
    assert not separable.below(window, size + taps - 2)
    assert separable.below(window * 2 - 1, 2 * size + 2 * taps - 4)
    assert not separable.below(p % size + r, size + 5)  # r has no known bound
    assert not separable.below(p % size * Symbol("stride"), size)


def test_a_flattened_block_is_one_index_where_the_host_finds_it_contiguous():
    """The filter's (c, r, s) flatten to the reduction's index: with the strides of a
    contiguous block, its offsets are that index times the innermost stride (so the
    loads are contiguous along the reduction); the host decides per call."""
    from ninetoothed.library import conv2d

    premade = conv2d.premake()
    kernel = ninetoothed.make(premade.arrangement, premade.application, premade.tensors)
    source = str(kernel.source)
    flat = "(k * BLOCK_SIZE_K + other_arange_2_0) * other_stride_3 if ninetoothed_other_flat_1_2_3"
    assert flat in source
    condition = (
        "ninetoothed_other_flat_1_2_3 = bool(other_stride_1 == other_size_3 * other_size_2 * "
        "other_stride_3 and other_stride_2 == other_size_3 * other_stride_3)"
    )
    assert condition in source
    signature = kernel.generated.signature
    assert signature.by_name["ninetoothed_other_flat_1_2_3"].constexpr
