"""``mm``: matrix multiplication, the paper's listings 5 and 6, for any number of
leading batch dimensions (``bmm`` is the 3-D case).

Each program computes one ``(BLOCK_SIZE_M, BLOCK_SIZE_N)`` tile of the output
(of one matrix of the batch): it walks the row of ``(BLOCK_SIZE_M,
BLOCK_SIZE_K)`` tiles of ``input`` and the column of ``(BLOCK_SIZE_K,
BLOCK_SIZE_N)`` tiles of ``other`` and accumulates their products in float32.
``bmm``, ``addmm`` and ``conv2d`` reuse :func:`arrangement` and
:func:`application`.  The block sizes are tuned between the bounds of their
``block_size`` symbols; :func:`premake` narrows them for short outputs, and
multiplies outputs of a few rows and columns without ``tl.dot`` (:func:`vector_tallest`).
"""

from __future__ import annotations

import functools
from typing import Any

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile, keep, leading, ones

__all__ = [
    "BLOCK_SIZE_K",
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "CONFIGS",
    "PERSISTENT_CONFIGS",
    "PERSISTENT_ELEMENTS",
    "PERSISTENT_TUNING",
    "THIN",
    "THIN_CONFIGS",
    "TUNING",
    "VECTOR_COLUMNS",
    "VECTOR_CONFIGS",
    "VECTOR_ROWS",
    "application",
    "arrangement",
    "blocks",
    "is_vector",
    "pinned_configs",
    "premake",
    "short_configuration",
    "tallest_block",
    "thin_tuning",
    "tuning",
    "uses_persistent",
    "vector_application",
    "vector_tallest",
]

BLOCK_SIZE_M = block_size(64, 256)
BLOCK_SIZE_N = block_size(64, 256)
BLOCK_SIZE_K = block_size(32, 64)
"""The tuned block sizes (``bmm``, ``addmm`` and ``conv2d`` take the same)."""


def arrangement(
    input: Tensor,
    other: Tensor,
    output: Tensor,
    BLOCK_SIZE_M: Symbol = BLOCK_SIZE_M,
    BLOCK_SIZE_N: Symbol = BLOCK_SIZE_N,
    BLOCK_SIZE_K: Symbol = BLOCK_SIZE_K,
) -> tuple[Tensor, Tensor, Tensor]:
    """``output`` in tiles; for each, the row of ``input``'s tiles and the column of
    ``other``'s tiles it needs (dimensions before the last two: one matrix each)."""
    batch = output.ndim - 2

    output_arranged = output.tile((*ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_N))
    output_arranged.dtype = output_arranged.dtype.squeeze(leading(batch))

    input_arranged = input.tile((*ones(batch), BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((*ones(batch), 1, -1))
    input_arranged = input_arranged.expand((*keep(batch), -1, output_arranged.shape[-1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(leading(batch + 1))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(leading(batch))

    other_arranged = other.tile((*ones(batch), BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((*ones(batch), -1, 1))
    other_arranged = other_arranged.expand((*keep(batch), output_arranged.shape[-2], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze((*leading(batch), batch + 1))
    other_arranged.dtype.dtype = other_arranged.dtype.dtype.squeeze(leading(batch))

    return input_arranged, other_arranged, output_arranged


def application(input: Tile, other: Tile, output: Tile) -> None:
    """One output tile: the sum over ``k`` of ``input[k] @ other[k]``, in float32."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator  # noqa: F841


PERSISTENT_CONFIGS = (
    (128, 128, 32, 4, 4),
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
    (128, 128, 64, 8, 4),
    (128, 128, 64, 4, 4),
    (64, 256, 32, 4, 4),
    (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 3),
    (128, 64, 32, 4, 4),
    (64, 128, 32, 4, 4),
    (64, 64, 32, 4, 3),
)
"""``(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` the
persistent variant tries.  A space generated from the block sizes' bounds (16
configurations spread over it) kept 128 x 256 x 64 in 8 warps with 4 stages only,
not the 3-stage one that persistent Hopper GEMMs run best with.  The first is what runs
untuned (``NINETOOTHED_TUNING=off``, a space cut to one): it fits a float32
program's shared memory, which the 3-stage 128 x 256 x 64 does not."""


def pinned_configs(entries: tuple[tuple[int, int, int, int, int], ...]) -> list[dict[str, int]]:
    """``make``'s ``configs`` for ``(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps,
    num_stages)`` tuples (the products' pinned spaces)."""
    return [
        {"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "num_warps": w, "num_stages": s}
        for m, n, k, w, s in entries
    ]


CONFIGS = (
    (64, 128, 32, 4, 4),
    (64, 128, 64, 4, 8),
    (64, 128, 64, 4, 6),
    (64, 128, 64, 8, 6),
    (64, 128, 128, 4, 4),
    (64, 64, 64, 4, 8),
    (64, 64, 64, 4, 6),
    (64, 64, 128, 4, 4),
    (128, 64, 64, 8, 6),
    (128, 64, 64, 4, 6),
    (128, 128, 64, 4, 5),
    (128, 128, 64, 8, 5),
    (128, 128, 64, 8, 4),
    (128, 128, 64, 4, 4),
    (64, 128, 64, 8, 4),
    (64, 64, 32, 8, 4),
)
"""``(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` an output that is
neither thin nor persistent (one program per tile) tunes over: outputs of fewer than
:data:`PERSISTENT_ELEMENTS`, such as a prefill's key and value projections.  They have
few tiles for the GPU, so each program must keep its multiprocessor busy on its own:
what pays is a deep pipeline of loads along ``k`` (6 or 8 stages), which the generated
space (3 or 4 stages) never tried.  On an H100 (each configuration pinned alone, as
``benchmarks/gemm_configs.py`` does; cuBLAS time / ours, weight transposed), the
generated space's best against this list's: 1024 x 4096 x 1024 0.724 -> 0.935
(64 x 128 x 64, 8 stages); 512 x 4096 x 1024 0.592 -> 0.942 (64 x 64 x 64, 8 stages);
256 x 4096 x 4096 0.766 -> 1.033; 1024 x 14336 x 1024 0.748 -> 1.003 (64 x 128 x 128,
4 stages); 2048 x 4096 x 1024 0.851 -> 0.936 (128 x 128 x 64, 5 stages); bmm 8 x 512^3
0.952 -> 0.989 (128 x 128 x 64 in 8 warps; ``docs/tuning.md``).  The last three
entries come from the generated space: two were its best at some measured shape, the
third a small tile that ran near them at a tiny output (100 x 777 x 333).  The
first is what runs untuned (``NINETOOTHED_TUNING=off``, or a space cut to one, the
GPU tests'): it fits a float32 program's shared memory, as the deepest pipelines of
4-byte operands do not (the tuner leaves those out for float32 operands)."""

TUNING = {"configs": pinned_configs(CONFIGS)}
"""``make``'s options for the one-program-per-tile GEMM kernels (:data:`CONFIGS`)."""

PERSISTENT_TUNING = {"persistent": True, "configs": pinned_configs(PERSISTENT_CONFIGS)}
"""``make``'s options for the persistent variant: :data:`PERSISTENT_CONFIGS` in
persistent programs (at most one per multiprocessor, each walking the
output's tiles, so a tile's loads overlap the previous tile's store)."""

PERSISTENT_ELEMENTS = 1 << 22
"""Outputs of at least this many elements (and taller than :data:`THIN`) take the
persistent variant.  On an H100 (two runs of
``benchmarks/gemm_variants.py``, cuBLAS's time over ours) it gained at the
paper's shapes, 4096^3 (0.951 to 0.958, 0.936 to 0.946) and bmm 4 x 2048^3
(0.925 to 0.956, 0.935 to 0.962); other large outputs moved within the runs'
noise either way (4096 x 4096 x 14336: 0.950 to 0.977, then 0.974 to 0.972).
It lost where the output has fewer 128 x 256 tiles than the GPU has
multiprocessors, since one program per multiprocessor then idles most of it:
bmm 8 x 512^3 (1.052 to 0.977, 1.001 to 0.982), 100 x 333 x 777 (0.640 to
0.605, 0.601 to 0.583).  2^22 elements are 128 such tiles (``docs/tuning.md``)."""


def uses_persistent(batch: int, rows: int, columns: int) -> bool:
    """Whether a (``batch``, ``rows``, ``columns``) output takes the persistent variant."""
    # Branches, not an expression: on a tracer's symbolic sizes (torch.compile with
    # dynamic shapes) a branch makes the tracer decide, and a variant must be a constant.
    if rows > THIN and batch * rows * columns >= PERSISTENT_ELEMENTS:
        return True
    return False


THIN = 64
"""Outputs of at most this many rows get thin tiles (see :func:`tallest_block`)."""


def tallest_block(rows: int) -> int | None:
    """The tallest ``BLOCK_SIZE_M`` worth tuning for an output of ``rows`` rows: None
    (the default bounds) unless the output is thin, as in decoding's products."""
    if rows > THIN:
        return None
    return _doubled(16, rows)


def _doubled(smallest: int, rows: int) -> int:
    """``smallest`` doubled until it holds ``rows``.  Doubling, not bit_length: compared
    with a tracer's symbolic row count, each step is a branch the tracer decides, and the
    result a constant (see :func:`uses_persistent`)."""
    tallest = smallest
    while tallest < rows:
        tallest *= 2
    return tallest


THIN_CONFIGS = (
    (128, 64, 4, 4),
    (16, 128, 4, 6),
    (16, 128, 2, 5),
    (32, 128, 4, 6),
    (32, 256, 4, 4),
    (32, 256, 2, 5),
    (64, 128, 4, 4),
    (64, 128, 2, 5),
    (64, 128, 4, 6),
    (128, 128, 4, 3),
    (256, 64, 4, 3),
)
"""``(BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` a thin output tunes over, its
``BLOCK_SIZE_M`` the tallest block (:func:`thin_tuning`).  A thin product reads its
weight once and is memory-bound: what it needs is enough programs in flight, so
narrow columns and long, deep-pipelined steps along ``k``.  On an H100 (one query
token of Llama-8B's shapes, interleaved against cuBLAS) the general space's columns
of at least 64 left 64 programs for N = 4096 and measured 0.76-0.86 of cuBLAS;
columns of 16 or 32 measured 1.02-1.10 (M = 1 and 16) and 0.97-1.02 (M = 64).  The
wide ones are for wide outputs (N = 14336), where the general space's picks were
at cuBLAS's speed.  The first is the one that fits float32 operands (the others'
deep pipelines of long steps need more shared memory than a GPU has for 4-byte
elements): a space cut to its first configurations (``NINETOOTHED_MAX_NUM_CONFIGS``,
the GPU tests' 1) must still run a float32 product, eagerly and under Inductor,
which fails the whole compile on a configuration that does not fit."""


VECTOR_ROWS = 4
"""Outputs of at most this many rows (and at most :data:`VECTOR_COLUMNS` columns) take
the vector form (:func:`vector_tallest`); a ``tallest`` of at most this many rows is the
vector form's (:func:`is_vector`)."""

VECTOR_COLUMNS = 2048
"""Outputs of at most this many columns (all matrices of a batch together) and at most
:data:`VECTOR_ROWS` rows take the vector form (:func:`vector_tallest`)."""


def vector_tallest(batch: int, rows: int, columns: int) -> int | None:
    """The vector form's ``BLOCK_SIZE_M`` (the power of two of ``rows``: 1, 2 or 4) for a
    (``batch``, ``rows``, ``columns``) output it serves, else None.

    It serves decoding's outputs of one to a few tokens with so few columns that
    ``tl.dot``'s tiles of at least 16 columns leave processors idle.  Such a product
    reads its weight once: with 16-column tiles, 1024 columns are 64 programs for 132
    processors, each streaming a 16-row slice of the weight.  On an H200 (the weight
    transposed as ``F.linear`` reads it; cuBLAS time / ours, each configuration alone,
    ``docs/design.md``), one token: 16-column ``tl.dot`` tiles measured 0.77, 0.81,
    0.98 at 512, 1024, 2048 columns and k = 4096, and 0.41, 0.56, 0.77 at k = 14336;
    the vector form, tiles of 1 to 4 columns and steps of 4096 along ``k``, 1.40, 1.28,
    1.15 and 0.99, 1.01, 0.95.  At 4096 columns the forms are even (1.10 against 1.05 at
    k = 4096, 0.96 against 0.98 at 14336).  With more rows its products (on the CUDA
    cores) weigh more: at 1024 columns and k = 4096 it measured 1.13 against 0.89 at
    two rows, 1.00 against 0.86 at four, 0.72 against 0.90 at eight."""
    # Branches, not expressions: on a tracer's symbolic sizes (torch.compile with dynamic
    # shapes) each comparison is a branch the tracer decides, and the result a constant.
    if rows < 1 or rows > VECTOR_ROWS or batch * columns > VECTOR_COLUMNS:
        return None
    return _doubled(1, rows)


def is_vector(tallest: int | None) -> bool:
    """Whether a GEMM variant's ``tallest`` is the vector form's (:func:`vector_tallest`)."""
    return tallest is not None and tallest <= VECTOR_ROWS


VECTOR_CONFIGS = (
    (1, 2048, 8, 1),
    (1, 4096, 4, 1),
    (2, 4096, 4, 1),
    (4, 2048, 8, 1),
    (1, 4096, 8, 1),
    (4, 4096, 8, 1),
    (2, 2048, 4, 1),
)
"""``(BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` the vector form tunes over:
narrow columns (programs in flight) and long steps along ``k`` (bytes in flight per
program: Triton does not pipeline loads that feed no ``tl.dot``, so a step's loads are
what a program has in flight, and steps of 1024 measured 0.54-0.84 of cuBLAS at
k = 14336 against 0.95-1.01 with 4096).  The best of about 30 on an H200 at one row, 512 to
4096 columns and k of 4096 and 14336 (the last the best at four rows), after the one
that runs untuned (``NINETOOTHED_MAX_NUM_CONFIGS=1``, the GPU tests'), which fits four
rows of float32 operands in a thread's registers as the others do not.  One stage:
nothing is staged through shared memory."""


def vector_application(input: Tile, other: Tile, output: Tile) -> None:
    """One output tile of the vector form (:func:`vector_tallest`): the sum over ``k`` of
    ``input[k] @ other[k]`` as float32 products summed along ``k``, without ``tl.dot``
    (whose tiles must be at least 16 wide on every side).  Exact in float32 for float32
    operands."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        row = ntl.cast(input[k], ntl.float32)
        columns = ntl.cast(other[k], ntl.float32)
        accumulator += ntl.sum(ntl.expand_dims(row, 2) * ntl.expand_dims(columns, 0), axis=1)

    output = accumulator  # noqa: F841


def blocks(tallest: int | None) -> dict[str, Any]:
    """The block sizes to tune, as arrangement arguments: the defaults, thin tiles of at
    most ``tallest`` rows with narrower columns and longer steps along ``k``, or the
    vector form's rows (:func:`is_vector`)."""
    if tallest is None:
        return {}
    if is_vector(tallest):
        return {
            "BLOCK_SIZE_M": tallest,
            "BLOCK_SIZE_N": block_size(1, 16),
            "BLOCK_SIZE_K": block_size(256, 4096),
        }
    return {
        "BLOCK_SIZE_M": block_size(16, tallest),
        "BLOCK_SIZE_N": block_size(16, 256),
        "BLOCK_SIZE_K": block_size(64, 256),
    }


def thin_tuning(tallest: int) -> dict[str, Any]:
    """``make``'s options for a thin output: :data:`THIN_CONFIGS` with ``BLOCK_SIZE_M`` of
    ``tallest`` rows, or :data:`VECTOR_CONFIGS` for the vector form."""
    entries = VECTOR_CONFIGS if is_vector(tallest) else THIN_CONFIGS
    return {"configs": [short_configuration(tallest, entry) for entry in entries]}


def short_configuration(tallest: int, entry: tuple[int, ...]) -> dict[str, int]:
    """``make``'s configuration for a :data:`THIN_CONFIGS` or :data:`VECTOR_CONFIGS`
    entry ``(BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages)`` at ``tallest`` rows
    (the vector form's rows are fixed by its arrangement, not tuned)."""
    names = ("BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_warps", "num_stages")
    tuned = dict(zip(names, entry, strict=True))
    return tuned if is_vector(tallest) else {"BLOCK_SIZE_M": tallest, **tuned}


def premake(ndim: int = 2, tallest: int | None = None, persistent: bool = False) -> Premade:
    """The kernel for ``ndim``-D operands (2 for ``mm``, 3 for ``bmm``); ``tallest``
    from :func:`tallest_block` (or :func:`vector_tallest`), ``persistent`` from
    :func:`uses_persistent`."""
    tensors = (Tensor(ndim), Tensor(ndim), Tensor(ndim))
    tuned = functools.partial(arrangement, **blocks(tallest))
    applied = vector_application if is_vector(tallest) else application
    return Premade(tuned, applied, tensors, tuning(tallest, persistent))


def tuning(tallest: int | None, persistent: bool) -> dict[str, Any]:
    """``make``'s options for a GEMM variant: :data:`PERSISTENT_TUNING`, :func:`thin_tuning`
    or :data:`TUNING`."""
    if not persistent:
        return TUNING if tallest is None else thin_tuning(tallest)
    if tallest is not None:
        raise ValueError(
            f"a thin GEMM (tallest={tallest}) has no persistent variant: its tiles are "
            "narrowed, and a persistent one is for outputs of many tiles"
        )
    return PERSISTENT_TUNING
