"""Shapes the arrangement ties together must agree, on every framework.

Only the outermost (grid) shapes used to be compared, so mismatched sizes
deeper down ran and returned garbage.  Each case here passes the grid check
(the tiles are pinned large enough that the tile counts agree) and must raise
:class:`LaunchError` naming both parameters and their shapes, before anything
launches; JAX also under ``jax.jit``, at trace time.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.library import assert_close
from support.tutorial import add, matmul

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError

MATMUL_TILES = {"BLOCK_SIZE_0": 128, "BLOCK_SIZE_1": 128, "BLOCK_SIZE_2": 128}

SHARED_MATMUL = ninetoothed.make(matmul.arrangement, matmul.application, (Tensor(2),) * 3)
"""One symbolic tensor for all three parameters: the kernel has one pair of sizes for
them, so only square products of one size fit it."""

SMALL_TILES = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16}

CASES = {
    # name: kernel, argument shapes, keywords, the two parameters and shapes named
    "add x longer than y": (
        add.constexpr_kernel,
        [(1000,), (999,), (1000,)],
        {"BLOCK_SIZE": 1024},
        r"'input' \(shape \(1000,\).*'other' \(shape \(999,\)",
    ),
    "output shorter than its inputs": (
        add.constexpr_kernel,
        [(1000,), (1000,), (999,)],
        {"BLOCK_SIZE": 1024},
        r"'input' \(shape \(1000,\).*'output' \(shape \(999,\)",
    ),
    "matmul inner sizes": (
        matmul.kernel,
        [(70, 50), (40, 90), (70, 90)],
        MATMUL_TILES,
        r"'input' \(shape \(70, 50\), dimension 1: 50\).*'other' \(shape \(40, 90\), dimension 0",
    ),
    "matmul output rows": (
        matmul.kernel,
        [(70, 50), (50, 90), (65, 90)],
        MATMUL_TILES,
        r"'input' \(shape \(70, 50\), dimension 0: 70\).*'output' \(shape \(65, 90\)",
    ),
    "one Tensor object for every parameter": (
        SHARED_MATMUL,
        [(1, 64), (64, 32), (1, 32)],
        SMALL_TILES,
        r"'input' \(shape \(1, 64\), dimension 0: 1\).*'other' \(shape \(64, 32\).*"
        r"make was given one Tensor object for both",
    ),
}


def arguments(framework, shapes):
    rng = np.random.default_rng()
    return [framework.from_numpy(rng.standard_normal(s).astype("float32")) for s in shapes]


@pytest.mark.parametrize("case", CASES)
def test_tied_sizes_must_agree(framework, case):
    kernel, shapes, keywords, message = CASES[case]
    with pytest.raises(LaunchError, match=message):
        framework.call(kernel, arguments(framework, shapes), keywords, outputs=[2])


@pytest.mark.parametrize("case", CASES)
def test_tied_sizes_must_agree_under_jax_jit(case):
    from support.jax_support import JaxSupport

    pytest.importorskip("jax")
    framework = JaxSupport()
    kernel, shapes, keywords, message = CASES[case]
    with pytest.raises(LaunchError, match=message):
        framework.jit_call(kernel, arguments(framework, shapes), keywords, outputs=[2])


def test_one_tensor_object_for_every_parameter_computes_square_products(framework):
    """Shapes that fit the one symbolic tensor are computed right (3 x 3 programs)."""
    a, b = arguments(framework, [(40, 40), (40, 40)])
    args = [a, b, framework.poisoned((40, 40), "float32")]
    (result,) = framework.call(SHARED_MATMUL, args, SMALL_TILES, outputs=[2])
    expected = framework.to_numpy(a).astype(np.float64) @ framework.to_numpy(b)
    assert_close(result, expected, "float32", matrix=True)  # TF32's tolerance on a GPU


def test_agreements_are_derived_once_per_kernel():
    spec = matmul.kernel.spec
    assert spec.agreements is spec.agreements
    names = [p.name for p in spec.tensor_parameters]
    tied = {tuple((names[i], d) for i, d in a.dims) for a in spec.agreements}
    assert tied == {
        (("input", 0), ("output", 0)),
        (("input", 1), ("other", 0)),
        (("other", 1), ("output", 1)),
    }
