"""``ninetoothed.debugging.simulate_arrangement``: which source element each element reads.

It returns, per parameter, the source tensor filled with its own flat indices
and the arranged tensor with the outermost level flattened into one program
dimension, each element holding the flat index it reads (-1 where masked).
"""

import functools
import math
import os

import numpy as np
import torch

from ninetoothed import Tensor
from ninetoothed.debugging import simulate_arrangement

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1" else "cpu"


def addmm_arrangement(matmul_arrangement, input, mat1, mat2, beta, alpha, output, **blocks):
    """Upstream's addmm arrangement, built on the paper's matmul one (docs/examples)."""
    _, _, input_arranged = matmul_arrangement(mat1, mat2, input, **blocks)
    mat1_arranged, mat2_arranged, output_arranged = matmul_arrangement(mat1, mat2, output, **blocks)
    return input_arranged, mat1_arranged, mat2_arranged, beta, alpha, output_arranged


def tiles(shape, tile_shape):
    """``tiles[i, j]``: the (padded with -1) tile (i, j) of a row-major index matrix."""
    rows, cols = (math.ceil(s / t) for s, t in zip(shape, tile_shape))
    padded = np.full((rows * tile_shape[0], cols * tile_shape[1]), -1)
    padded[: shape[0], : shape[1]] = np.arange(math.prod(shape)).reshape(shape)
    return padded.reshape(rows, tile_shape[0], cols, tile_shape[1]).transpose(0, 2, 1, 3)


def test_addmm_arrangement(examples):
    m, n, k, block = 3, 4, 5, 2
    arrangement = functools.partial(
        addmm_arrangement,
        examples.matmul_arrangement,
        BLOCK_SIZE_M=block,
        BLOCK_SIZE_N=block,
        BLOCK_SIZE_K=block,
    )
    tensors = (
        Tensor(shape=(m, n)),
        Tensor(shape=(m, k)),
        Tensor(shape=(k, n)),
        Tensor(0),
        Tensor(0),
        Tensor(shape=(m, n)),
    )

    sources, targets = simulate_arrangement(arrangement, tensors, device=DEVICE)

    assert len(sources) == len(targets) == 6
    for source, shape in zip(sources, ((m, n), (m, k), (k, n), (), (), (m, n))):
        expected = torch.arange(math.prod(shape)).reshape(shape) if shape else torch.tensor(0)
        assert torch.equal(source.cpu(), expected)
    for index in (3, 4):
        assert torch.equal(targets[index].cpu(), torch.tensor(0))

    output_tiles = tiles((m, n), (block, block))
    input_tiles = tiles((m, k), (block, block))
    other_tiles = tiles((k, n), (block, block))
    programs = [(i, j) for i in range(output_tiles.shape[0]) for j in range(output_tiles.shape[1])]
    expected_output = np.stack([output_tiles[i, j] for i, j in programs])
    expected_input = np.stack([input_tiles[i] for i, _ in programs])
    expected_other = np.stack([other_tiles[:, j] for _, j in programs])

    assert np.array_equal(targets[0].cpu().numpy(), expected_output)
    assert np.array_equal(targets[1].cpu().numpy(), expected_input)
    assert np.array_equal(targets[2].cpu().numpy(), expected_other)
    assert np.array_equal(targets[5].cpu().numpy(), expected_output)

    for arranged, target in zip(arrangement(*tensors), targets):
        flattened = arranged.flatten() if arranged.ndim else arranged
        assert np.array_equal(flattened.eval(), target.cpu().numpy())


def test_overlapping_windows():
    def arrangement(input):
        return (input.tile((3,), strides=(2,)),)

    sources, targets = simulate_arrangement(arrangement, (Tensor(shape=(8,)),), device=DEVICE)

    assert torch.equal(sources[0].cpu(), torch.arange(8))
    assert targets[0].tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, -1]]
