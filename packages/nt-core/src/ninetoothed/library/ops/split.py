"""Split-K for the matrix-multiplication ops: when to split the reduction, and the
two passes that do it.

A GEMM whose output has few tiles leaves most of the GPU idle: the paper's
convolution, (4, 512, 14, 14) x (512, 512, 3, 3), is a 576 x 512 output of a
4,608-long reduction, 20 tiles of 128 x 128 for 132 processors, each walking
all of ``k``.  Split-K cuts ``k`` into ``S`` chunks, computes the ``S``
partial products in one launch of ``S`` times as many programs
(:mod:`~ninetoothed.library.mm_split`) into a float32 workspace, and adds
them in a second, memory-bound launch (:mod:`~ninetoothed.library.split_sum`).

The rule (:func:`splits`): count the output's tiles at a reference tile
(the pinned block size in tests; thin outputs are never split, below).  With
at least half of ``PROCESSORS`` tiles, ``S = 1``: one launch as before.
Otherwise ``S`` is the largest count whose programs still fit one wave,
``PROCESSORS // tiles``, so that the reference tiles make one program per
processor and the tuner's larger tiles fewer; it is capped so that each chunk
keeps at least ``MIN_STEPS`` steps of ``STEP`` (a chunk of a few steps is
mostly prologue, and the workspace grows with ``S``: ``S * M * N`` float32
values written once and read once).

The reference tile is the tuning space's: ``REFERENCE_TILE`` (64) for ``mm``,
``bmm`` and ``addmm``, whose space (:data:`ninetoothed.library.mm.CONFIGS`)
keeps a multiprocessor busy with one 64-wide tile and a deep pipeline, and
``CONVOLUTION_TILE`` (128) for ``conv2d``, whose generated space has shallow
pipelines.  On an H100, with 128 as the products' reference, prefill's
1024 x 4096 x 1024 split in two ran 0.695 of cuBLAS, against 0.935 unsplit
with the deep pipelines; 512 x 4096 x 1024 split in four 0.757, against 0.942
(``docs/tuning.md``).  The paper's convolution, (4, 512, 14, 14) x (512, 512,
3, 3), is a 576 x 512 output of a 4,608-long reduction, 20 tiles of 128 x 128
for 132 processors: ``S = 6``, 120 programs of 128 x 128, 216 of 64 x 128,
chunks of 768, a 7 MB workspace (an H100: 97 us unsplit, 32 us split; cuDNN
40 us).

Thin outputs (at most ``mm.THIN`` rows, decoding's Linear layers) are never
split.  Their products are memory-bound: splitting sped a (2, 4096) x (4096,
4096) product up by 6 us on the device (30 to 24 us), about what the second
launch and the workspace allocation cost the host on the lent H100, and an
eager decoding loop is host-bound: the end-to-end Llama benchmark fell from
482 to 354 tokens/s with its Linear layers split.  ``pinned_splits`` still
splits them (tests cover the thin split kernel).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ninetoothed.library import split_sum
from ninetoothed.library.ops.framework import Framework
from ninetoothed.library.ops.kernels import kernel, pinned
from ninetoothed.library.tiling import Pattern
from ninetoothed.runtime.make import Kernel

__all__ = [
    "CONVOLUTION_TILE",
    "MIN_STEPS",
    "PROCESSORS",
    "REFERENCE_TILE",
    "STEP",
    "partial_products",
    "pinned_splits",
    "splits",
    "total",
    "total_addmm",
]

PROCESSORS = 132
"""The streaming multiprocessors the rule fills: an H100's (SXM) and an H200's."""

REFERENCE_TILE = 64
"""The output tile's rows and columns the rule counts a product's tiles with."""

CONVOLUTION_TILE = 128
"""The output tile's rows and columns the rule counts a convolution's tiles with."""

STEP = 64
"""The ``k`` step the rule assumes (the largest default ``BLOCK_SIZE_K``)."""

MIN_STEPS = 4
"""The fewest steps of ``STEP`` a chunk of the reduction may have."""


_PINNED_SPLITS: list[int | None] = [None]
"""The split count :func:`pinned_splits` forces (a plain list, as ``torch.compile``
traces it)."""


@contextlib.contextmanager
def pinned_splits(count: int) -> Iterator[None]:
    """Within the block, the matrix-multiplication ops cut every reduction into
    ``count`` chunks (1: never split) instead of following :func:`splits`' rule:
    tests run both paths on any device with it."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"pinned_splits: count must be a positive int, got {count!r}")
    previous, _PINNED_SPLITS[0] = _PINNED_SPLITS[0], count
    try:
        yield
    finally:
        _PINNED_SPLITS[0] = previous


def splits(
    batch: int,
    rows: int,
    columns: int,
    depth: int,
    tallest: int | None = None,
    tile: int = REFERENCE_TILE,
) -> int:
    """``S``, the chunks to cut a reduction of ``depth`` into, for ``batch`` products
    of ``rows`` x ``columns``, counting ``tile`` x ``tile`` output tiles; 1 for no
    split, always for a thin output (``tallest``: the thin tiles' rows, given for
    one).  Under :func:`~ninetoothed.library.pinned_block_sizes` the pinned size
    stands for both the tile and the step; :func:`pinned_splits` overrides the rule,
    except for an empty reduction (chunks of no length), which is never split."""
    if depth == 0:
        return 1
    if _PINNED_SPLITS[0] is not None:
        return _PINNED_SPLITS[0]
    if tallest is not None:
        return 1  # a thin output (decoding): see the module's docstring
    size = pinned()
    height, width, step = (size, size, size) if size else (tile, tile, STEP)
    tiles = batch * _ceil(rows, height) * _ceil(columns, width)
    if tiles == 0 or 2 * tiles >= PROCESSORS:
        return 1
    return max(1, min(PROCESSORS // tiles, depth // (MIN_STEPS * step)))


def _ceil(size: int, tile: int) -> int:
    return -(-size // tile)


def partial_products(
    framework: Framework, found: Kernel, operands: Sequence[Any], shape: Sequence[int], count: int
) -> Any:
    """The first pass: ``found`` (a split-K kernel) on ``operands`` into a new float32
    workspace of ``(count, *shape)``, returned."""
    workspace = framework.empty(operands[0], (count, *shape), "float32")
    arguments = [*operands, workspace]
    return framework.run(found, arguments, [len(arguments) - 1])[0]


def total(framework: Framework, workspace: Any, like: Any, shape: Sequence[int]) -> Any:
    """The second pass: the sum of ``workspace``'s partials in a new tensor of
    ``shape`` and ``like``'s dtype."""
    found = kernel(split_sum, ndim=len(shape))
    return framework.run(found, [workspace, framework.empty(like, shape)], [1])[0]


def total_addmm(
    framework: Framework,
    workspace: Any,
    input: Any,
    pattern: Pattern,
    scalars: tuple[float, float],
    shape: Sequence[int],
) -> Any:
    """The second pass with ``addmm``'s epilogue: ``beta * input + alpha * sum`` for
    ``scalars = (beta, alpha)``, ``input`` of this broadcast ``pattern``."""
    found = kernel(split_sum, ndim=len(shape), input_pattern=pattern)
    output = framework.empty(input, shape)
    return framework.run(found, [workspace, input, *scalars, output], [4])[0]
