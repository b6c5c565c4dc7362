"""Sizes that tiles divide and sizes they do not, one after another, on every launch path.

The host reports each tiled size's alignment (``nt_triton._codegen.divisibility``)
and a tile's range check vanishes where the tile divides it: a wrong
alignment would read and write past the tensors.  Kernels made directly with
``ninetoothed.make`` run on every framework with divisible and ragged sizes
in one process (a plan or flag kept from another shape would show), against
float64 references with poisoned outputs; on PyTorch, tensors are views into
NaN-filled buffers, so a read past a tensor poisons the result and a write
past it shows in the buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.base import ON_GPU
from support.divisible import FLAT_ADD, MM
from support.guarded import guarded, outside
from support.library import assert_close, f64, random

from ninetoothed.runtime.hookspecs import TensorInfo
from nt_triton._abi import ParameterKind
from nt_triton._kernel import TritonKernel

PINNED = {} if ON_GPU else {"BLOCK": 16}
PINNED_MM = {} if ON_GPU else {"BM": 16, "BN": 16, "BK": 16}

ADD_SHAPES = [(8, 32), (7, 9), (4, 64), (1, 1), (16, 17)]
"""Element counts 256 and 256 (divisible by 16), 63, 1 and 272 (divisible again)."""

MM_SHAPES = [(64, 48, 32), (65, 48, 33), (64, 49, 32), (48, 32, 64), (1, 16, 16), (0, 8, 16)]
"""``(M, K, N)``: all divisible by 16, M and N ragged, K ragged, divisible again, M = 1,
and an empty output (``torch.from_numpy`` gives it zero strides, which is no overlap)."""


@pytest.mark.parametrize("contiguous", [True, False])
def test_flattened_add(framework, contiguous) -> None:
    for shape in ADD_SHAPES:
        x, y = random(shape, "float32"), random(shape, "float32")
        given = [framework.from_numpy(t) if contiguous else framework.non_contiguous(t)
                 for t in (x, y)]  # fmt: skip
        z = framework.poisoned(shape, "float32")
        (result,) = framework.call(FLAT_ADD, [*given, z], PINNED, [2])
        assert_close(result, f64(x) + f64(y), "float32")


def test_mm(framework) -> None:
    for m, k, n in MM_SHAPES:
        a, b = random((m, k), "float32"), random((k, n), "float32")
        c = framework.poisoned((m, n), "float32")
        args = [framework.from_numpy(a), framework.from_numpy(b), c]
        (result,) = framework.call(MM, args, PINNED_MM, [2])
        assert_close(result, f64(a) @ f64(b), "float32", matrix=True)


def alignments(kernel: Any, shapes: list[tuple[int, ...]], scalars: dict[str, int]) -> list[int]:
    """The size alignments the host computes for tensors of ``shapes``."""
    generated = kernel.generated
    assert isinstance(generated, TritonKernel)
    infos = [TensorInfo(s, (s[1], 1), "float32", "cpu", 0) for s in shapes]
    plan = generated.prepare(infos, [0] * len(shapes), scalars)
    names = [p.name for p in generated.signature.host]
    return [
        plan.arguments[names.index(p.name)]
        for p in generated.signature.of_kind(ParameterKind.SIZE_ALIGNMENT)
    ]


@pytest.mark.parametrize("tile", [16, 64, 1024])
def test_alignment_says_divisible_exactly_when_it_is(tile) -> None:
    """``alignment % tile == 0`` is what the kernel tests: it must hold exactly for the
    multiples of the tile (never for a ragged or empty size)."""
    for rows in range(0, 40):
        for columns in (1, 3, 16, 96, 1024):
            found = alignments(FLAT_ADD, [(rows, columns)] * 3, {"BLOCK": tile})
            elements = rows * columns
            divisible = elements > 0 and elements % tile == 0
            assert [a % tile == 0 for a in found] == [divisible] * 3, (rows, columns, found)


def test_alignment_is_capped_at_the_largest_tile() -> None:
    """Sizes that differ only in higher powers of two share one compiled kernel."""
    assert alignments(FLAT_ADD, [(1024, 1024)] * 3, {}) == [1024] * 3  # block_size()'s bound
    assert alignments(MM, [(4096, 4096)] * 3, {}) == [1024] * 6


torch_only = pytest.mark.skipif(ON_GPU, reason="interpreter memory layout: CPU only")


def run_guarded_mm(m: int, k: int, n: int, lie: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """mm on guarded views (the result, and what lies around it after the run); ``lie``
    claims every size divisible."""
    a, b = random((m, k), "float32"), random((k, n), "float32")
    (av, _), (bv, _), (cv, c_buffer) = guarded(a), guarded(b), guarded(np.full((m, n), np.nan))
    generated = MM.generated
    assert isinstance(generated, TritonKernel)
    infos = [TensorInfo(tuple(t.shape), t.stride(), "float32", "cpu", 0) for t in (av, bv, cv)]
    plan = generated.prepare(infos, [av, bv, cv], {"BM": 16, "BN": 16, "BK": 16})
    if lie:
        names = [p.name for p in generated.signature.host]
        for parameter in generated.signature.of_kind(ParameterKind.SIZE_ALIGNMENT):
            plan.arguments[names.index(parameter.name)] = 1024
    generated.launch(plan)
    reference = f64(a) @ f64(b)
    return cv.numpy() - reference, outside(c_buffer, (m, n))


@torch_only
@pytest.mark.parametrize("shape", MM_SHAPES)
def test_nothing_is_read_or_written_past_the_tensors(shape) -> None:
    pytest.importorskip("torch")
    error, around = run_guarded_mm(*shape)
    assert np.abs(error).max(initial=0.0) < 1e-4  # initial: the empty output has no error
    assert np.isnan(around).all(), "written past the output"


@torch_only
def test_a_wrong_alignment_would_be_seen() -> None:
    """The guard above can fail: an alignment claiming a ragged size divisible drops
    the checks, and the kernel then reads and writes past the tensors."""
    pytest.importorskip("torch")
    error, around = run_guarded_mm(65, 49, 33, lie=True)
    assert np.isnan(error).any() or not np.isnan(around).all()
