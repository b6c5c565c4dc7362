"""Kernels made directly with ``ninetoothed.make`` that loop over the tiles of a
dimension whose last tile may be ragged (tests of ``nt_triton._codegen.ragged_loops``).

``ROWS``: each program owns ``BM`` rows of ``x`` and walks their tiles of ``BN``
columns, storing each tile doubled into ``y`` and summing the rows into ``s``
(loads and stores in the loop).  ``NESTED``: one program per batch entry walks
its tiles in two nested loops, both over dimensions that may be ragged.
``STEPPED``: the loop of ``ROWS`` written with a step, which is left as written.
"""

from __future__ import annotations

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor, block_size


def rows_arrangement(x, y, s, BM=block_size(), BN=block_size()):  # noqa: B008
    def row_tiles(t):
        arranged = t.tile((BM, BN)).tile((1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        return arranged

    return row_tiles(x), row_tiles(y), s.tile((BM,))


def rows_application(x, y, s):
    total = ntl.zeros((x.dtype.shape[0],), dtype=ntl.float32)
    for j in range(x.shape[0]):
        y[j] = x[j] * 2
        total += ntl.sum(x[j], 1)
    s = total  # noqa: F841


def stepped_application(x, y, s):
    total = ntl.zeros((x.dtype.shape[0],), dtype=ntl.float32)
    for j in range(0, x.shape[0], 1):
        y[j] = x[j] * 2
        total += ntl.sum(x[j], 1)
    s = total  # noqa: F841


def nested_arrangement(x, y, BM=block_size(), BN=block_size()):  # noqa: B008
    def batch_tiles(t):
        arranged = t.tile((1, BM, BN)).tile((1, -1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze(0)
        return arranged

    return batch_tiles(x), batch_tiles(y)


def nested_application(x, y):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = x[i, j] + 1


ROWS = ninetoothed.make(rows_arrangement, rows_application, (Tensor(2), Tensor(2), Tensor(1)))
STEPPED = ninetoothed.make(rows_arrangement, stepped_application, (Tensor(2), Tensor(2), Tensor(1)))
NESTED = ninetoothed.make(nested_arrangement, nested_application, (Tensor(3), Tensor(3)))
