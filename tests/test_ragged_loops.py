"""Loops over tiles split into whole tiles (unmasked) and the ragged tail (masked).

``nt_triton._codegen.ragged_loops`` rewrites a loop over the tiles of a
dimension into a loop over the whole tiles, whose loads and stores lose that
dimension's check, and a loop over the rest with the checks as written.  A
split point one too high would read and write past the tensors; one too low
or a tail that does not run would leave tiles out.  Kernels made directly
with ``ninetoothed.make`` (tests/support/ragged.py) run on the interpreter with
small pinned tiles (several programs along the grid), divisible and ragged
sizes in one process, against float64 references with poisoned outputs; on
PyTorch, inside NaN-filled buffers that show reads and writes past the
tensors.  The generated source shows where the checks are.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from support.base import ON_GPU
from support.divisible import MM
from support.guarded import guarded, outside
from support.library import assert_close, f64, random
from support.ragged import NESTED, ROWS, STEPPED

PINNED = {} if ON_GPU else {"BM": 4, "BN": 8}

ROW_SHAPES = [(9, 32), (9, 33), (9, 5), (9, 8), (9, 0), (0, 8), (17, 16), (12, 17)]
"""Columns a multiple of the tile (8), a ragged tail of one element, fewer than one
tile, exactly one, none; no rows; divisible again; a tail of one after two tiles.
Nine rows in tiles of 4: three programs, the last ragged."""


def rows_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return 2 * f64(x), f64(x).sum(1)


@pytest.mark.parametrize("contiguous", [True, False])
def test_rows_of_every_size(framework, contiguous) -> None:
    """Divisible and ragged sizes through one kernel, in turn: the alignments the host
    passes select the compiled variant, so a divisible call's variant is never reused
    for a ragged one (or the other way round)."""
    for shape in ROW_SHAPES:
        x = random(shape, "float32")
        given = framework.from_numpy(x) if contiguous else framework.non_contiguous(x)
        y, s = framework.poisoned(shape, "float32"), framework.poisoned(shape[:1], "float32")
        doubled, sums = framework.call(ROWS, [given, y, s], PINNED, [1, 2])
        expected_doubled, expected_sums = rows_reference(x)
        assert_close(doubled, expected_doubled, "float32")
        assert_close(sums, expected_sums, "float32")


def test_a_divisible_call_then_a_ragged_one(framework) -> None:
    """The same kernel, the same tiles: 16 columns (no tail), then 17 (a tail)."""
    for columns in (16, 17, 16):
        x = random((6, columns), "float32")
        y, s = framework.poisoned((6, columns), "float32"), framework.poisoned((6,), "float32")
        doubled, sums = framework.call(ROWS, [framework.from_numpy(x), y, s], PINNED, [1, 2])
        assert_close(doubled, 2 * f64(x), "float32")
        assert_close(sums, f64(x).sum(1), "float32")


NESTED_SHAPES = [(2, 8, 16), (2, 9, 17), (3, 4, 19), (2, 13, 8), (1, 3, 5), (2, 0, 8)]


def test_nested_loops(framework) -> None:
    """Both loops split: whole rows of tiles, then the ragged row; in each, whole
    tiles, then the ragged one."""
    for shape in NESTED_SHAPES:
        x = random(shape, "float32")
        (result,) = framework.call(
            NESTED, [framework.non_contiguous(x), framework.poisoned(shape, "float32")],
            PINNED, [1],
        )  # fmt: skip
        assert_close(result, f64(x) + 1, "float32")


torch_only = pytest.mark.skipif(ON_GPU, reason="interpreter memory layout: CPU only")


@torch_only
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_nothing_is_read_or_written_past_the_tensors(shape) -> None:
    pytest.importorskip("torch")
    import torch

    x = random(shape, "float32")
    (xv, _), (yv, y_buffer) = guarded(x), guarded(np.full(shape, np.nan, "float32"))
    s = torch.full(shape[:1], float("nan"))
    ROWS(xv, yv, s, **PINNED)
    np.testing.assert_allclose(yv.numpy(), 2 * f64(x), rtol=1e-6)
    # float32 sums of values that cancel: error relative to the magnitudes summed.
    magnitude = np.abs(f64(x)).sum(1)
    np.testing.assert_array_less(np.abs(s.numpy() - f64(x).sum(1)), 4e-6 * magnitude + 1e-30)
    assert np.isnan(outside(y_buffer, shape)).all(), "written past the output"


def kernel_source(kernel: Any) -> str:
    """The ``@triton.jit`` function of a kernel's generated source."""
    return str(kernel.generated.source).split("@triton.jit")[-1].split("# Host code")[0]


def loops(source: str) -> list[str]:
    """The outermost ``for`` loops of a kernel's source, header and body each."""
    found = []
    for match in re.finditer(r"^( *)for .*\n(?:\1 .*\n)*", source, re.MULTILINE):
        if len(match.group(1)) <= 8:  # at the function's level or under one ``if``
            found.append(match.group(0))
    return found


def test_the_whole_tiles_loop_has_no_check_of_the_looped_dimension() -> None:
    source = kernel_source(ROWS)
    whole, tail = loops(source)
    assert "for j in range(0, ninetoothed_whole_tiles" in whole
    # The rows' checks stay (another dimension); the columns' go from the whole tiles.
    assert "j * BN + x_arange_2_1 < x_size_1" not in whole
    assert "j * BN + y_arange_2_1 < y_size_1" not in whole
    assert "x_arange_2_0 < x_size_0" in whole
    assert "j * BN + x_arange_2_1 < x_size_1" in tail
    assert "j * BN + y_arange_2_1 < y_size_1" in tail
    # The tail only where some size is ragged: a constexpr condition on the alignments.
    assert re.search(r"if not \(ninetoothed_aligned_\d+ % BN == 0\) & ", source)


def test_a_product_loads_whole_tiles_of_k_without_checks() -> None:
    whole, tail = loops(kernel_source(MM))
    assert re.search(r"tl\.minimum\(.*a_size_1 // BK\), b_size_0 // BK\)", kernel_source(MM))
    assert "k * BK + a_arange_2_1 < a_size_1" not in whole
    assert "k * BK + b_arange_2_0 < b_size_0" not in whole
    assert "k * BK + a_arange_2_1 < a_size_1" in tail
    assert "k * BK + b_arange_2_0 < b_size_0" in tail


def test_a_loop_with_a_step_is_left_as_written() -> None:
    source = kernel_source(STEPPED)
    assert len(loops(source)) == 1
    assert "j * BN + x_arange_2_1 < x_size_1" in source
    assert "ninetoothed_whole_tiles" not in source


def test_the_knob_keeps_loops_as_written(monkeypatch) -> None:
    """``NINETOOTHED_SPLIT_LOOPS=0`` (for comparing the two forms) is read when a kernel
    is made, and a kernel made before in the other form is not reused for it."""
    from support.ragged import rows_application, rows_arrangement

    import ninetoothed
    from ninetoothed import Tensor

    monkeypatch.setenv("NINETOOTHED_SPLIT_LOOPS", "0")
    kernel = ninetoothed.make(rows_arrangement, rows_application, (Tensor(2), Tensor(2), Tensor(1)))
    source = kernel_source(kernel)
    assert len(loops(source)) == 1 and "ninetoothed_whole_tiles" not in source
    assert "j * BN + x_arange_2_1 < x_size_1" in source
