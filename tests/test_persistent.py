"""Persistent programs (``make(..., persistent=True)``): every grid index, exactly once.

A persistent kernel launches at most :func:`nt_triton._persistent_grid.program_cap`
programs (3 under the interpreter) and each loops over the grid.  Grids of
several programs in every dimension, with counts that the cap divides and
counts it does not, run on every framework against float64 references with
poisoned outputs: an index skipped leaves NaN, one computed with another
program's indices writes a wrong tile.  The host's grid is checked to be
capped, and options and applications that cannot be persistent are refused.
"""

from __future__ import annotations

import pytest
from support.base import ON_GPU
from support.divisible import add_application, flat_add_arrangement, matrices, mm_application
from support.divisible import mm_arrangement as mm_arrangement_
from support.library import assert_close, f64, random

import ninetoothed
from ninetoothed import Tensor, block_size
from ninetoothed.errors import CodegenError
from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton import _persistent_grid
from nt_triton._kernel import TritonKernel

PERSISTENT_MM = ninetoothed.make(mm_arrangement_, mm_application, matrices(3), persistent=True)
PERSISTENT_ADD = ninetoothed.make(
    flat_add_arrangement, add_application, matrices(3), persistent=True
)

PINNED_MM = {} if ON_GPU else {"BM": 16, "BN": 16, "BK": 16}

MM_SHAPES = [(48, 16, 48), (65, 33, 47), (16, 16, 16), (1, 1, 1), (0, 8, 8), (80, 16, 112)]
"""``(M, K, N)``: 9 programs (the cap of 3 divides them), 20 (it does not), one, one
element, none, 35 (seven grid columns, grouped ordering's groups of 8 rows cut short)."""


def test_mm(framework) -> None:
    for m, k, n in MM_SHAPES:
        a, b = random((m, k), "float32"), random((k, n), "float32")
        c = framework.poisoned((m, n), "float32")
        args = [framework.from_numpy(a), framework.from_numpy(b), c]
        (result,) = framework.call(PERSISTENT_MM, args, PINNED_MM, [2])
        assert_close(result, f64(a) @ f64(b), "float32", matrix=True)


def test_flattened_add_non_contiguous(framework) -> None:
    pinned = {} if ON_GPU else {"BLOCK": 16}
    for shape in [(8, 32), (7, 9), (1, 1), (16, 17)]:
        x, y = random(shape, "float32"), random(shape, "float32")
        given = [framework.non_contiguous(t) for t in (x, y)]
        z = framework.poisoned(shape, "float32")
        (result,) = framework.call(PERSISTENT_ADD, [*given, z], pinned, [2])
        assert_close(result, f64(x) + f64(y), "float32")


def _batched_arrangement(x, y, BLOCK=block_size()):  # noqa: B008
    return x.tile((1, BLOCK, BLOCK)), y.tile((1, BLOCK, BLOCK))


def _double(x, y):
    y = x * 2  # noqa: F841


def test_three_grid_dimensions(framework) -> None:
    """Row-major decomposition of a 3-D grid inside the loop (2 x 3 x 2 programs)."""
    kernel = ninetoothed.make(
        _batched_arrangement, _double, (Tensor(3), Tensor(3)), persistent=True
    )
    x = random((2, 40, 20), "float32")
    y = framework.poisoned(x.shape, "float32")
    (result,) = framework.call(kernel, [framework.from_numpy(x), y], {"BLOCK": 16}, [1])
    assert_close(result, f64(x) * 2, "float32")


def _grid(kernel, shapes, scalars):
    generated = kernel.generated
    assert isinstance(generated, TritonKernel)
    infos = [TensorInfo(s, (s[1], 1), "float32", "cpu", 0) for s in shapes]
    return generated.concrete_grid(generated.prepare(infos, [0] * len(shapes), scalars))[0]


def test_the_grid_is_capped(monkeypatch) -> None:
    monkeypatch.setattr(_persistent_grid, "INTERPRETER_PROGRAMS", 5)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    shapes = [(64, 16), (16, 64), (64, 64)]
    assert _grid(PERSISTENT_MM, shapes, {"BM": 16, "BN": 16, "BK": 16}) == (5,)
    assert _grid(PERSISTENT_MM, shapes, {"BM": 32, "BN": 32, "BK": 16}) == (4,)
    plain = ninetoothed.make(mm_arrangement_, mm_application, matrices(3))
    assert _grid(plain, shapes, {"BM": 16, "BN": 16, "BK": 16}) == (16,)


def test_one_program_walks_the_whole_grid(framework, monkeypatch) -> None:
    if ON_GPU:
        pytest.skip("the interpreter's cap: on a GPU the cap is the multiprocessor count")
    monkeypatch.setattr(_persistent_grid, "INTERPRETER_PROGRAMS", 1)
    a, b = random((40, 24), "float32"), random((24, 56), "float32")
    c = framework.poisoned((40, 56), "float32")
    args = [framework.from_numpy(a), framework.from_numpy(b), c]
    (result,) = framework.call(PERSISTENT_MM, args, PINNED_MM, [2])
    assert_close(result, f64(a) @ f64(b), "float32", matrix=True)


def _early_return(x, y):
    if x.shape[0] == 0:
        return
    y = x  # noqa: F841


def test_an_early_return_is_refused() -> None:
    with pytest.raises(CodegenError, match="persistent=True needs an application without"):
        ninetoothed.make(
            lambda x, y: (x.tile((16,)), y.tile((16,))),
            _early_return,
            (Tensor(1), Tensor(1)),
            persistent=True,
        )


def test_persistent_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="persistent must be a bool, got str 'yes'"):
        ninetoothed.make(flat_add_arrangement, add_application, matrices(3), persistent="yes")


def test_a_single_program_kernel_has_no_loop() -> None:
    """A grid of one program (every dimension literally 1) needs no walking."""
    kernel = ninetoothed.make(
        lambda x, y: (x.tile((-1,)), y.tile((-1,))),
        _double,
        (
            Tensor(1, shape_options={"constexpr": True}),
            Tensor(1, shape_options={"constexpr": True}),
        ),
        persistent=True,
    )
    assert "tl.program_id(0)" not in kernel.source
    assert "tl.range(tl.program_id(0)" in PERSISTENT_ADD.source
