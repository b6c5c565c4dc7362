"""The launch grid: the outermost levels of the arranged tensors, aligned and checked.

Every program of a launch handles one element of the outermost level of
each arranged tensor, so those levels must agree.  :func:`align_outermost_ranks`
gives levels that differ only in literal 1s (or in rank, as upstream pairs
them) the first tensor's shape; :func:`check_outermost_shapes` refuses what
cannot agree at ``make`` time and returns the grid.
"""

from __future__ import annotations

from collections.abc import Collection

from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.errors import ArrangementError
from ninetoothed.spec._pairing import paired_with_grid
from ninetoothed.spec.parameter import Parameter

__all__ = ["align_outermost_ranks", "check_outermost_shapes"]


def _gridded(parameters: list[Parameter], apart: Collection[str]) -> list[Parameter]:
    """The tensor parameters whose outermost levels make the grid: all but those
    in ``apart`` (reached only through their source); if that leaves none, the
    first tensor's, as upstream's grid always is."""
    tensors = [p for p in parameters if not p.is_scalar]
    return [p for p in tensors if p.name not in apart] or tensors[:1]


def align_outermost_ranks(
    parameters: list[Parameter], apart: Collection[str] = ()
) -> list[Parameter]:
    """Give every tensor's outermost level the first's rank, where literal 1s differ.

    Upstream unravels the program id over each tensor's own outermost shape,
    so outermost shapes that differ only in dimensions of literal size 1
    (ntops's instance_norm: ``(N, C, 1)`` for the input, ``(N, C)`` for the
    weight) address the same tiles.  Such a level is rearranged to the first
    tensor's shape (squeezing its 1s, inserting the first's), which keeps
    that addressing; other differences in rank get upstream's pairing of
    tiles program by program (:func:`~ninetoothed.spec._pairing.paired_with_grid`,
    checked at launch), and what still differs is left for
    :func:`check_outermost_shapes` to report.  Parameters in ``apart`` are
    left as they are (see :func:`_gridded`).
    """
    tensors = _gridded(parameters, apart)
    if not tensors:
        return parameters
    reference = tensors[0].arranged.shape
    aligned = []
    for parameter in parameters:
        shape = parameter.arranged.shape
        if parameter not in tensors or len(shape) == len(reference):
            aligned.append(parameter)
            continue
        ones = tuple(dim for dim, size in enumerate(shape) if _is_one(size))
        reference_ones = [dim for dim, size in enumerate(reference) if _is_one(size)]
        if len(shape) - len(ones) == len(reference) - len(reference_ones):
            result = parameter.arranged.squeeze(ones) if ones else parameter.arranged
            for dim in reference_ones:
                result = result.unsqueeze(dim)
        else:
            result = paired_with_grid(parameter.name, parameter.arranged, reference)
        aligned.append(Parameter(parameter.name, parameter.source, result))
    return aligned


def _is_one(size: SymbolLike) -> bool:
    return isinstance(size, int) and size == 1


def check_outermost_shapes(
    parameters: list[Parameter], apart: Collection[str] = ()
) -> tuple[SymbolLike, ...]:
    """The shared outermost shape, or an :class:`ArrangementError` naming each shape.

    Sizes that differ in form (``input_size_0`` and ``output_size_0``) may
    still agree at run time: the launcher checks them on concrete sizes.  See
    :func:`_may_agree` for what is rejected at ``make`` time.  Parameters in
    ``apart`` take no part (see :func:`_gridded`).
    """
    tensors = _gridded(parameters, apart)
    if not tensors:
        return ()
    shapes = [p.arranged.shape for p in tensors]
    reference = shapes[0]
    for shape in shapes[1:]:
        if (
            len(shape) != len(reference)
            or not all(_may_agree(a, b) for a, b in zip(shape, reference))
            or _crossed_ones(shapes)
        ):
            listing = "; ".join(f"{p.name}: {_format_shape(p.arranged.shape)}" for p in tensors)
            raise ArrangementError(
                "the outermost levels of the arranged tensors must have the same shape (it is "
                f"the launch grid), got {listing}"
            )
    # Prefer literal sizes when some tensor has them: they are known at compile time.
    grid = list(reference)
    for shape in shapes:
        for dim, size in enumerate(shape):
            if isinstance(size, int):
                grid[dim] = size
    return tuple(grid)


def _may_agree(left: SymbolLike, right: SymbolLike) -> bool:
    """Whether two outermost sizes can be equal at run time.

    Two literals must be equal; a literal may equal a symbolic size, checked
    at launch (a literal 1 against a symbolic size too: upstream's argmin
    tiles a whole row, ``(row_blocks,)`` against its output's ``(1,)``).
    """
    if isinstance(left, int) and isinstance(right, int):
        return left == right
    return True


def _crossed_ones(shapes: list[tuple[SymbolLike, ...]]) -> bool:
    """Whether two shapes each have a literal 1 where the other has a tuned size.

    That is the classic incomplete arrangement (rows and columns of tiles
    not yet expanded across the grid, as in the tutorial's matmul before
    ``expand``): refused at ``make``.  Only a size that mentions a meta symbol
    counts: a number of blocks the tuner chooses cannot be required to be 1.
    A size of the arguments alone (upstream programs tile a dimension by the
    size it must have, ``(N, 1)`` against ``(1, C // 2)``) is checked at launch,
    as a one-sided 1 is.
    """

    def tuned(size: SymbolLike) -> bool:
        return isinstance(size, Symbol) and any(s.meta for s in size.free_symbols.values())

    def ones_against_symbols(a: tuple[SymbolLike, ...], b: tuple[SymbolLike, ...]) -> bool:
        return any(_is_one(x) and tuned(y) for x, y in zip(a, b))

    return any(
        ones_against_symbols(a, b) and ones_against_symbols(b, a)
        for index, a in enumerate(shapes)
        for b in shapes[index + 1 :]
        if len(a) == len(b)
    )


def _format_shape(shape: tuple[SymbolLike, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
