"""When ``scaled_dot_product_attention`` splits the keys (flash-decoding), and how.

:mod:`~ninetoothed.library.flash_decoding` computes a few query rows against a
long key cache in two kernels.  The rule (:func:`key_splits`), for a call
whose arguments need no gradient:

* at most :data:`~ninetoothed.library.ops.attention.FEW_QUERIES` query rows,
  not causal (torch's causal mask is aligned top-left: a few query rows see a
  few keys, and the one-kernel path stops there);
* the programs of one split, ``batch x heads / heads per program``, are fewer
  than the GPU's processors (:data:`WAVES` programs each);
* then ``S`` is the most chunks that keep every program on a processor of its
  own, at most :data:`~ninetoothed.library.flash_decoding.MAX_SPLITS`, with
  every chunk at least :data:`MIN_BLOCKS` key blocks of :data:`BLOCK` keys
  (fewer keys per program and the merge's reads outweigh the split's); ``S`` is
  then lowered so that no chunk is empty.

``S >= 2`` takes the two kernels; ``S = 1`` keeps the one-kernel path.  A batch
of one with 32 query heads over 8 key/value heads makes 8 programs a split:
1,024 keys split 8 ways (chunks of 2 blocks), 4,096 keys 16 ways (4 blocks),
32,768 keys 16 ways (32 blocks).  :func:`pinned_key_splits` forces ``S`` (tests, benchmarks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ninetoothed.library import flash_decoding
from ninetoothed.library.ops.framework import Framework
from ninetoothed.library.ops.kernels import kernel, pinned
from ninetoothed.library.ops.split import PROCESSORS

__all__ = [
    "BLOCK",
    "MAX_ROWS",
    "MIN_BLOCKS",
    "WAVES",
    "attend",
    "key_splits",
    "packing",
    "pinned_key_splits",
]

BLOCK = flash_decoding.CONFIGS[0][0]
"""Keys per block of the split kernel's configuration (the pinned size in tests)."""

MIN_BLOCKS = 2
"""The fewest key blocks a chunk may have."""

WAVES = 1
"""Programs per processor the split aims at.  Two programs of 16 rows x 64 keys fit
a Hopper processor, but one longer program each streams the cache faster: on an
H100 (batch 1, GQA 32/8, interleaved rounds against torch's SDPA) 16 chunks
measured 1.012 / 1.019 / 1.014 of torch at 4k / 16k / 32k keys, against 0.958 /
0.993 / 0.993 for the 32 that two per processor gave; at batch 4 (32 programs)
4 chunks 1.016 / 1.017 against 0.995 / 0.930 for 8 and 9."""

MAX_ROWS = 64
"""The most query rows (heads x rows) one program of the split kernel holds."""

_PINNED: list[int | None] = [None]
"""The split count :func:`pinned_key_splits` forces (a plain list: ``torch.compile``
traces it)."""


@contextlib.contextmanager
def pinned_key_splits(count: int) -> Iterator[None]:
    """Within the block, attention of at most 16 query rows without a causal mask
    cuts its keys into ``count`` chunks: 0 keeps the one-kernel path, ``count >= 1``
    takes the two kernels with exactly that many chunks (empty ones included)."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"pinned_key_splits: count must be an int >= 0, got {count!r}")
    if count > flash_decoding.MAX_SPLITS:
        raise ValueError(
            f"pinned_key_splits: count must be at most {flash_decoding.MAX_SPLITS}, got {count}"
        )
    previous, _PINNED[0] = _PINNED[0], count
    try:
        yield
    finally:
        _PINNED[0] = previous


def packing(group: int, queries: int) -> tuple[int, int]:
    """``(heads, rows)`` of one split program for ``group`` query heads per key/value
    head and ``queries`` query rows: the rows, a power of two, hold every query
    and fill 16 rows (a ``tl.dot``'s least) with the heads; the heads are the
    largest power of two dividing ``group`` that keeps ``heads x rows`` within
    :data:`MAX_ROWS`."""
    rows = 1 << max(queries - 1, 0).bit_length()
    heads = 1
    while group % (2 * heads) == 0 and 2 * heads * rows <= MAX_ROWS:
        heads *= 2
    return heads, max(rows, 16 // heads)


def key_splits(programs: int, keys: int) -> int:
    """``S`` for ``programs`` programs a split over ``keys`` keys (see the module)."""
    if _PINNED[0] is not None:
        return _PINNED[0]
    block = pinned() or BLOCK
    blocks = -(-keys // block)
    if programs == 0 or blocks == 0:
        return 1
    wanted = WAVES * PROCESSORS // programs
    count = max(1, min(wanted, blocks // MIN_BLOCKS, flash_decoding.MAX_SPLITS))
    length = -(-blocks // count)
    return -(-blocks // length)


def attend(
    framework: Framework,
    arguments: tuple[Any, Any, Any, float],
    shape: tuple[int, int, int, int],
    key_heads: int,
    head_bound: int,
    precision: dict[str, str] | None = None,
    config: int = 0,
) -> Any | None:
    """``arguments`` (query, key, value, scale) of ``shape`` (B, H, Lq, D) with
    ``key_heads`` key/value heads attended in two kernels, or None when :func:`key_splits`
    says one (``S = 1``; the caller runs the one-kernel path).  The split kernel runs
    ``flash_decoding.CONFIGS[config]`` (the op: the first; tests and the benchmark
    run the others); ``precision``: the split kernel's float32 product precision
    (:func:`~ninetoothed.library.ops._precision.products`)."""
    query, key = arguments[0], arguments[1]
    b, h, lq, d = shape
    heads, rows = packing(h // key_heads, lq)
    keys = framework.describe(key).shape[2]
    count = key_splits(b * (h // heads), keys)
    if keys == 0 or count == 0 or (count == 1 and _PINNED[0] is None):
        return None  # no keys: the one kernel writes zeros
    split = kernel(
        flash_decoding,
        part="split",
        heads=heads,
        rows=rows,
        head_bound=head_bound,
        config=config,
        **(precision or {}),
    )
    partials = framework.empty(query, (b, h, count, lq, d), "float32")
    lse = framework.empty(query, (b, h, count, lq), "float32")
    partials, lse = framework.run(split, [*arguments, partials, lse], [4, 5])
    merge = kernel(flash_decoding, part="merge", head_bound=head_bound)
    return framework.run(merge, [partials, lse, framework.empty(query, shape)], [2])[0]
