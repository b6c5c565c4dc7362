"""``rotary_position_embedding`` (rope): rotate pairs of a (batch, seq, heads, head_dim)
tensor by the angles whose sines and cosines are (seq, head_dim / 2) tables.

Pair ``i`` is ``(x[2i], x[2i + 1])`` when interleaved (GPT-J's layout) and
``(x[i], x[i + head_dim / 2])`` otherwise (half-split, Llama's).  Each program
takes ``BLOCK_SIZE`` heads of one (batch, position): their vectors and that
position's table rows are read once and the rotated vectors written once, in
float32.  Half-split, each half is a level of the arrangement; interleaved,
the whole vectors are read and split into pairs in registers (``ntl.split``),
so memory is still read row by row.
"""

from __future__ import annotations

import functools

import ninetoothed.language as ntl
from ninetoothed.arrangement.symbol import Symbol, block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.library.tiling import Premade, Tile

__all__ = ["application", "arrangement", "interleaved_application", "premake", "rotate"]


def arrangement(
    input: Tensor,
    sin: Tensor,
    cos: Tensor,
    output: Tensor,
    interleaved: bool = True,
    BLOCK_SIZE: Symbol = block_size(1, 64),
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Blocks of heads (whole vectors, or their two halves), and the tables' rows."""

    def heads(tensor: Tensor) -> Tensor:
        if interleaved:
            arranged = tensor.tile((1, 1, BLOCK_SIZE, -1))
            arranged.dtype = arranged.dtype.squeeze((0, 1))
        else:
            arranged = tensor.tile((1, 1, BLOCK_SIZE, tensor.shape[-1] // 2)).tile((1, 1, 1, 2))
            arranged.dtype = arranged.dtype.squeeze((0, 1, 2))
            arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
        return arranged.squeeze(3)

    input_arranged = heads(input)

    def table(tensor: Tensor) -> Tensor:
        arranged = tensor.tile((1, -1)).squeeze(1)
        arranged.dtype = arranged.dtype.squeeze(0)
        arranged = arranged.unsqueeze(0).unsqueeze(2)
        return arranged.expand((input_arranged.shape[0], -1, input_arranged.shape[2]))

    return input_arranged, table(sin), table(cos), heads(output)


def rotate(first: Tile, second: Tile, sin: Tile, cos: Tile) -> tuple[Tile, Tile]:
    """The pair ``(first, second)`` rotated, in float32."""
    sin_float, cos_float = ntl.cast(sin, ntl.float32), ntl.cast(cos, ntl.float32)
    first_float, second_float = ntl.cast(first, ntl.float32), ntl.cast(second, ntl.float32)
    return (
        first_float * cos_float - second_float * sin_float,
        first_float * sin_float + second_float * cos_float,
    )


def application(input: Tile, sin: Tile, cos: Tile, output: Tile) -> None:
    """Half-split: the two halves of a block of heads, rotated."""
    rotated_first, rotated_second = rotate(input[0], input[1], sin, cos)
    output[0] = rotated_first
    output[1] = rotated_second


def interleaved_application(input: Tile, sin: Tile, cos: Tile, output: Tile) -> None:
    """Interleaved: a block of heads split into its even and odd elements, rotated,
    and joined back."""
    pairs = ntl.reshape(input, (input.shape[0], input.shape[1] // 2, 2))
    first, second = ntl.split(pairs)
    rotated_first, rotated_second = rotate(first, second, sin, cos)
    output = ntl.reshape(ntl.join(rotated_first, rotated_second), input.shape)  # noqa: F841


def premake(interleaved: bool) -> Premade:
    """The kernel for one layout of the pairs."""
    input, output = (Tensor(4, shape_options=(None, None, None, {"constexpr": True})) for _ in "io")
    sin, cos = (Tensor(2, shape_options=(None, {"constexpr": True})) for _ in "sc")
    arranged = functools.partial(arrangement, interleaved=interleaved)
    chosen = interleaved_application if interleaved else application
    return Premade(arranged, chosen, (input, sin, cos, output))
