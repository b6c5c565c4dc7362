"""Draw three arrangements the way the paper's figures do: a tiled matrix, matrix
multiplication and a 2-D convolution.

    pip install "nt-core[visualization]"
    python docs/examples/visualize.py [OUTPUT_FOLDER]

Each picture shows every parameter's source tensor once per level, each
element coloured by the tile of that level that reads it: level 0 is what the
programs take, level 1 how program 0's share is split into the tiles its loop
walks over.  The tile counts are printed too.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from ninetoothed import Tensor
from ninetoothed.visualization import arrangement_tiles, visualize, visualize_arrangement


def tile_arrangement(x, BLOCK_SIZE_M, BLOCK_SIZE_N):
    return (x.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)),)


def matmul_arrangement(input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def conv2d_arrangement(input, filter, output, **block_sizes):
    """Convolution as a matrix multiplication over sliding windows (implicit GEMM)."""
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1).permute((1, 0))
    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return matmul_arrangement(input_arranged, filter_arranged, output_arranged, **block_sizes)


EXAMPLES = {
    "tile": (
        functools.partial(tile_arrangement, BLOCK_SIZE_M=2, BLOCK_SIZE_N=4),
        (Tensor(shape=(6, 8)),),
    ),
    "matmul": (
        functools.partial(matmul_arrangement, BLOCK_SIZE_M=2, BLOCK_SIZE_N=2, BLOCK_SIZE_K=4),
        (Tensor(shape=(6, 8)), Tensor(shape=(8, 4)), Tensor(shape=(6, 4))),
    ),
    "conv2d": (
        functools.partial(conv2d_arrangement, BLOCK_SIZE_M=8, BLOCK_SIZE_N=2, BLOCK_SIZE_K=8),
        (Tensor(shape=(1, 2, 5, 5)), Tensor(shape=(3, 2, 2, 2)), Tensor(shape=(1, 3, 4, 4))),
    ),
}
"""Name: (arrangement with concrete tile sizes, tensors of concrete shape)."""


def main(folder: Path) -> None:
    """Draw every example into ``folder`` and print its tile counts."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (arrangement, tensors) in EXAMPLES.items():
        path = folder / f"{name}.png"
        visualize_arrangement(arrangement, tensors, save_path=str(path))
        counts = ", ".join(
            f"{parameter.name}: " + " / ".join(str(level.num_tiles) for level in parameter.levels)
            for parameter in arrangement_tiles(arrangement, tensors)
        )
        print(f"{path}  tiles per level  {counts}")
    tiled = Tensor(shape=(6, 8)).tile((2, 4))
    visualize(tiled, color="C0", save_path=str(folder / "tile-levels.png"))
    print(f"{folder / 'tile-levels.png'}  the levels of x.tile((2, 4)) on a 6 x 8 tensor")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "visualizations"))
