"""``conv2d`` by implicit GEMM, reusing ``mm``'s arrangement and application (the
paper's listing 8), with stride, padding and dilation.

With the input (N, C, H, W), the filter (K, C, R, S) and the output (N, K, P, Q),
each output position (n, p, q) is a row of a (N*P*Q, C*R*S) matrix: the input
window it sees, laid out by ``tile`` (strided and dilated windows over the
padded input) and ``ravel``/``flatten``.  The filter is a (C*R*S, K) matrix
and the output a (N*P*Q, K) one; ``mm`` does the rest.  The filter's sizes
are compile-time constants, so index arithmetic divides by constants.
"""

from __future__ import annotations

import functools

from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library import mm, mm_split
from ninetoothed.library.tiling import Premade

__all__ = [
    "BLOCK_SIZE_K",
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "TUNING",
    "Pair",
    "application",
    "arrangement",
    "operands",
    "positions",
    "premake",
]

Pair = tuple[int, int]

BLOCK_SIZE_M = block_size(32, 128)
BLOCK_SIZE_N = block_size(32, 128)
BLOCK_SIZE_K = block_size(32, 64)
"""The tuned block sizes: smaller than ``mm``'s, as convolutions are smaller GEMMs (the
paper's (4, 512, 14, 14) x (512, 512, 3, 3) is 576 x 512 x 4608: 128 x 128 blocks make
20 programs for 132 SMs, 64 x 64 blocks 72)."""

TUNING = {"max_num_configs": 16}
"""``make``'s options: at most 16 configurations spread over the block sizes' bounds.
(``mm``'s pinned deep pipelines, :data:`ninetoothed.library.mm.CONFIGS`, are not
measured on a convolution's gathered windows, and the paper's convolution is split.)"""


def operands(
    input: Tensor,
    filter: Tensor,
    stride: Pair = (1, 1),
    padding: Pair = (0, 0),
    dilation: Pair = (1, 1),
) -> tuple[Tensor, Tensor]:
    """The convolution's GEMM operands: the input windows as an (N*P*Q, C*R*S) matrix
    and the filter as a (C*R*S, K) one."""
    if any(padding):
        input = input.pad(((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    input_arranged = input.tile(
        (1, *filter.shape[1:]),
        strides=(-1, -1, *stride),
        dilation=(1, 1, *dilation),
        floor_mode=True,
    )
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    return input_arranged, filter_arranged


def positions(output: Tensor) -> Tensor:
    """An (N, K, P, Q) output as the (N*P*Q, K) matrix of its positions' channels (a
    workspace (S, N, K, P, Q) as S such matrices)."""
    first = output.ndim - 4
    order = (*range(first), first, first + 2, first + 3, first + 1)
    return output.permute(order).flatten(start_dim=first, end_dim=first + 3)


def arrangement(
    input: Tensor,
    filter: Tensor,
    output: Tensor,
    stride: Pair = (1, 1),
    padding: Pair = (0, 0),
    dilation: Pair = (1, 1),
    BLOCK_SIZE_M: Symbol = BLOCK_SIZE_M,
    BLOCK_SIZE_N: Symbol = BLOCK_SIZE_N,
    BLOCK_SIZE_K: Symbol = BLOCK_SIZE_K,
    split: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """The convolution as ``mm(input windows, filter)`` into the output's positions.

    With ``split``, split-K (:mod:`~ninetoothed.library.mm_split`): ``output`` is a
    float32 workspace (S, N, K, P, Q) of ``S`` partial convolutions, each in the
    output's layout, which :mod:`~ninetoothed.library.split_sum` adds."""
    windows, matrix = operands(input, filter, stride, padding, dilation)
    product = mm_split.arrangement if split else mm.arrangement
    return product(windows, matrix, positions(output), BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)


application = mm.application


def premake(
    stride: Pair = (1, 1), padding: Pair = (0, 0), dilation: Pair = (1, 1), split: bool = False
) -> Premade:
    """The kernel for one stride, padding and dilation; with ``split``, the split-K
    partial products into a 5-D workspace."""
    filter = Tensor(4, shape_options={"constexpr": True})
    tensors = (Tensor(4), filter, Tensor(5 if split else 4))
    arranged = functools.partial(
        arrangement, stride=stride, padding=padding, dilation=dilation, split=split
    )
    name = "conv2d_split" if split else None
    return Premade(arranged, application, tensors, TUNING, name=name)
