"""Pictures of tensors and arrangements, as the paper draws them.

Needs matplotlib, an optional extra: ``pip install "nt-core[visualization]"``.
It is imported when a picture is drawn, not when this module is imported.

* :func:`visualize` draws a tensor of concrete shape level by level, outermost
  first, every element a square (upstream's function of the same name).
* :func:`visualize_arrangement` draws, for every parameter of an arrangement,
  its source tensor once per level, each source element coloured by the tile
  of that level that reads it: level 0 shows the tiles the programs take,
  deeper levels how one program's tile is split further.  Upstream has a
  function of this name that opens an interactive window; this one draws a
  static image.
* :func:`arrangement_tiles` is the data behind that picture.

Dimensions beyond two are laid out as nested grids: the last dimension runs
along a row, the one before down a column, the third-to-last repeats that
block along the row with a gap, and so on.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.compat.eval import eval as evaluate_indices
from ninetoothed.errors import ArrangementError

__all__ = [
    "LevelTiles",
    "ParameterTiles",
    "arrangement_tiles",
    "visualize",
    "visualize_arrangement",
]

CELL_PIXELS = 12
"""Side of one element's square in the drawn image, border included."""

UNREAD = (0.93, 0.93, 0.93, 1.0)
"""Colour of source elements no tile of the level reads."""

BORDER = (0.15, 0.15, 0.15, 1.0)

TITLE_INCHES = 3.0
"""The width a picture's title takes at 9 points: no column is narrower."""

_default_colors = itertools.count()


@dataclass(frozen=True)
class LevelTiles:
    """How the tiles of one level cover the source tensor.

    ``labels`` has the source's shape: for each source element, the number of
    the tile of this level that reads it (the tile's row-major index within
    the level; the lowest one where several do), or -1 where none does.
    """

    depth: int
    shape: tuple[int, ...]
    labels: np.ndarray

    @property
    def num_tiles(self) -> int:
        """How many tiles of this level read at least one source element."""
        return int(np.unique(self.labels[self.labels >= 0]).size)


@dataclass(frozen=True)
class ParameterTiles:
    """The levels of one arranged parameter over its source tensor."""

    name: str
    source_shape: tuple[int, ...]
    levels: tuple[LevelTiles, ...]


def arrangement_tiles(
    arrangement: Callable[..., Any], tensors: Sequence[Any], program_id: int = 0
) -> tuple[ParameterTiles, ...]:
    """Which tile of each level reads each source element, per tensor parameter.

    ``tensors`` and the arrangement must be concrete, as for
    :func:`ninetoothed.compat.debugging.simulate_arrangement`.  Level 0 covers every
    program; a deeper level ``d`` is shown inside program ``program_id`` with
    the indices of the levels between them at 0.  The innermost level (the
    elements of a tile) gets no entry of its own, except for a tensor that is
    not tiled at all, whose one level is its elements.  Scalars are left out.
    """
    parameters = [tensor for tensor in tensors if isinstance(tensor, Tensor)]
    arranged = arrangement(*tensors)
    arranged = (arranged,) if isinstance(arranged, Tensor) else tuple(arranged)
    if len(arranged) != len(parameters):
        raise ArrangementError(
            f"the arrangement returned {len(arranged)} values for {len(parameters)} tensors"
        )
    names = _parameter_names(arrangement, tensors)
    result = []
    for name, tensor, tiled in zip(names, parameters, arranged):
        if tensor.ndim == 0:
            continue
        indices = evaluate_indices(tiled)
        level_shapes = [tuple(level.shape) for level in tiled.levels()]
        source_shape = tuple(int(size) for size in tiled.source.shape)
        levels = tuple(
            LevelTiles(
                depth,
                level_shapes[depth],
                _labels(indices, level_shapes, depth, program_id, source_shape),
            )
            for depth in range(max(1, len(level_shapes) - 1))
        )
        result.append(ParameterTiles(name, source_shape, levels))
    return tuple(result)


def visualize(tensor: Tensor, color: Any = None, save_path: str | None = None) -> Any:
    """Draw ``tensor`` (of concrete shape) level by level, outermost at the top.

    Every element of every level is a square in ``color`` (any matplotlib
    colour; by default the next of matplotlib's ``C0``, ``C1`` … cycle).
    Saves the picture to ``save_path`` when given, and returns the matplotlib
    ``Figure`` (upstream shows it in a window instead when no path is given).
    """
    plt_colors = _matplotlib()
    if color is None:
        color = f"C{next(_default_colors) % 10}"
    rgba = plt_colors.to_rgba(color)
    levels = tensor.levels()
    for level in levels:
        if not all(isinstance(size, int) for size in level.shape):
            raise ArrangementError(
                f"visualize needs concrete shapes; a level of {tensor.source.name} has the "
                f"shape {level.shape} (use Tensor(shape=...) and integer tile sizes, or .subs)"
            )
    images = [_image(np.zeros(level.shape, dtype=int), [rgba]) for level in levels]
    figure = _figure(len(images), 1, images)
    for depth, (axes, image, level) in enumerate(zip(figure.axes, images, levels)):
        axes.imshow(image, interpolation="nearest")
        axes.set_title(f"level {depth}: shape {tuple(level.shape)}", fontsize=9)
        axes.axis("off")
    return _finish(figure, save_path)


def visualize_arrangement(
    arrangement: Callable[..., Any],
    tensors: Sequence[Any],
    save_path: str | None = None,
    *,
    program_id: int = 0,
) -> Any:
    """Draw each parameter's source tensor once per level, coloured by tile.

    One row per tensor parameter (scalars left out), one picture per level:
    see :func:`arrangement_tiles` for what the colours mean.  Saves to
    ``save_path`` when given and returns the matplotlib ``Figure``.
    """
    _matplotlib()
    parameters = arrangement_tiles(arrangement, tensors, program_id)
    if not parameters:
        raise ArrangementError("visualize_arrangement: the arrangement has no tensor parameters")
    columns = max(len(parameter.levels) for parameter in parameters)
    palette = _palette()
    images = {
        (row, column): _image(level.labels, palette)
        for row, parameter in enumerate(parameters)
        for column, level in enumerate(parameter.levels)
    }
    figure = _figure(len(parameters), columns, list(images.values()))
    grid = np.asarray(figure.axes).reshape(len(parameters), columns)
    for row, parameter in enumerate(parameters):
        for column in range(columns):
            axes = grid[row, column]
            axes.axis("off")
            if column >= len(parameter.levels):
                continue
            level = parameter.levels[column]
            axes.imshow(images[row, column], interpolation="nearest")
            where = "programs" if level.depth == 0 else f"in program {program_id}"
            axes.set_title(
                f"{parameter.name}: level {level.depth}, {level.num_tiles} tiles ({where})",
                fontsize=9,
            )
    return _finish(figure, save_path)


def _labels(
    indices: np.ndarray,
    level_shapes: list[tuple[int, ...]],
    depth: int,
    program_id: int,
    source_shape: tuple[int, ...],
) -> np.ndarray:
    """Per source element, the lowest tile number of level ``depth`` that reads it."""
    sizes = [math.prod(shape) for shape in level_shapes]
    flat = indices.reshape(*sizes) if sizes else indices.reshape(1)
    if depth > 0:
        if not 0 <= program_id < sizes[0]:
            raise ArrangementError(
                f"program_id {program_id} is out of range for {sizes[0]} programs"
            )
        flat = flat[(program_id,) + (0,) * (depth - 1)]
    tiles = flat.reshape(flat.shape[0], -1) if flat.ndim > 1 else flat.reshape(-1, 1)
    numbers = np.broadcast_to(np.arange(tiles.shape[0])[:, None], tiles.shape)
    read = tiles >= 0
    labels = np.full(math.prod(source_shape), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(labels, tiles[read], numbers[read])
    labels[labels == np.iinfo(np.int64).max] = -1
    return labels.reshape(source_shape)


def _placement(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Grid row and column of every element, and the grid's height and width."""
    rows = np.zeros(shape, dtype=np.int64)
    columns = np.zeros(shape, dtype=np.int64)
    height = width = 1
    grid = np.indices(shape) if shape else np.zeros((0,))
    for position, dim in enumerate(reversed(range(len(shape)))):
        size = max(shape[dim], 1)
        if position % 2 == 0:
            stride = 1 if position == 0 else width + 1
            columns += grid[dim] * stride
            width = size if position == 0 else size * stride - 1
        else:
            stride = 1 if position == 1 else height + 1
            rows += grid[dim] * stride
            height = size if position == 1 else size * stride - 1
    return rows, columns, height, width


def _image(labels: np.ndarray, palette: list[tuple[float, ...]]) -> np.ndarray:
    """An RGBA image of a labelled grid: a bordered square per element, gaps transparent."""
    rows, columns, height, width = _placement(labels.shape)
    cells = np.zeros((height, width, 4))
    colors = np.array([UNREAD, *palette])
    cells[rows.ravel(), columns.ravel()] = colors[
        np.where(labels < 0, 0, labels % len(palette) + 1).ravel()
    ]
    image = cells.repeat(CELL_PIXELS, axis=0).repeat(CELL_PIXELS, axis=1)
    edge = np.zeros((height * CELL_PIXELS, width * CELL_PIXELS), dtype=bool)
    edge[::CELL_PIXELS, :] = True
    edge[CELL_PIXELS - 1 :: CELL_PIXELS, :] = True
    edge[:, ::CELL_PIXELS] = True
    edge[:, CELL_PIXELS - 1 :: CELL_PIXELS] = True
    image[edge & (image[..., 3] > 0)] = BORDER
    return image


def _parameter_names(arrangement: Callable[..., Any], tensors: Sequence[Any]) -> list[str]:
    try:
        names = list(inspect.signature(arrangement).parameters)
    except (TypeError, ValueError):
        names = []
    result = []
    for index, tensor in enumerate(tensors):
        if isinstance(tensor, Tensor):
            result.append(names[index] if index < len(names) else tensor.name)
    return result


def _palette() -> list[tuple[float, ...]]:
    from matplotlib import colormaps, colors

    return [colors.to_rgba(color) for color in colormaps["tab20"].colors]


def _figure(rows: int, columns: int, images: list[np.ndarray]) -> Any:
    from matplotlib.figure import Figure

    height = max(image.shape[0] for image in images) / CELL_PIXELS
    width = max(image.shape[1] for image in images) / CELL_PIXELS
    scale = 0.25
    # Each column at least as wide as its title ("x: level 1, 2 tiles (in program 0)").
    column_width = max(width * scale, TITLE_INCHES)
    figure = Figure(
        figsize=(columns * column_width + 0.5, max(1.5, rows * (height * scale + 0.6))),
        layout="constrained",
    )
    figure.subplots(rows, columns, squeeze=False)
    return figure


def _finish(figure: Any, save_path: str | None) -> Any:
    if save_path is not None:
        figure.savefig(save_path, dpi=100)
    return figure


def _matplotlib() -> Any:
    try:
        from matplotlib import colors
    except ImportError as error:
        raise ImportError(
            'ninetoothed.visualization needs matplotlib: pip install "nt-core[visualization]"'
        ) from error
    return colors
