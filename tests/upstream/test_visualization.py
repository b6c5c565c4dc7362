"""``ninetoothed.visualization``: pictures of tensors and arrangements.

Counts the tiles both in the data the picture is drawn from and in the drawn
image (one colour per tile, sampled at the centre of every element's square).
"""

import math

import numpy as np
import pytest

from ninetoothed import Tensor

pytest.importorskip("matplotlib")

from ninetoothed.compat.visualization import CELL_PIXELS  # noqa: E402
from ninetoothed.visualization import (  # noqa: E402
    arrangement_tiles,
    visualize,
    visualize_arrangement,
)


def cell_colors(axes):
    """The colour at the centre of every drawn square of an axes' image."""
    image = np.asarray(axes.images[0].get_array())
    centres = image[CELL_PIXELS // 2 :: CELL_PIXELS, CELL_PIXELS // 2 :: CELL_PIXELS]
    drawn = centres[centres[..., 3] > 0]
    return [tuple(np.round(color, 4)) for color in drawn]


def test_visualize_draws_every_element_of_every_level(tmp_path):
    tiled = Tensor(shape=(6, 8)).tile((2, 4))
    path = tmp_path / "tiled.png"

    figure = visualize(tiled, color="C0", save_path=str(path))

    assert path.stat().st_size > 0
    assert [len(cell_colors(axes)) for axes in figure.axes] == [3 * 2, 2 * 4]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("tile", {"x": [6]}),
        ("matmul", {"input": [3, 2], "other": [2, 2], "output": [6]}),
        ("conv2d", {"input": [2, 1], "filter": [2, 1], "output": [4]}),
    ],
)
def test_arrangement_pictures_show_the_tiles(examples, tmp_path, name, expected):
    arrangement, tensors = examples.EXAMPLES[name]
    path = tmp_path / f"{name}.png"

    figure = visualize_arrangement(arrangement, tensors, save_path=str(path))
    parameters = arrangement_tiles(arrangement, tensors)

    assert path.stat().st_size > 0
    assert {p.name: [level.num_tiles for level in p.levels] for p in parameters} == expected
    drawn = [axes for axes in figure.axes if axes.images]
    assert len(drawn) == sum(len(levels) for levels in expected.values())
    for axes, level in zip(drawn, (level for p in parameters for level in p.levels)):
        colors = cell_colors(axes)
        source_size = math.prod(level.labels.shape)
        unread = int((level.labels < 0).sum())
        assert len(colors) == source_size
        assert len(set(colors)) == level.num_tiles + (1 if unread else 0)


def test_tiles_of_a_program_and_of_the_whole_grid():
    def arrangement(x):
        return (x.tile((4,), strides=(2,)),)

    (parameter,) = arrangement_tiles(arrangement, (Tensor(shape=(9,)),))

    (level,) = parameter.levels
    assert level.labels.tolist() == [0, 0, 0, 0, 1, 1, 2, 2, 3]


def test_concrete_shapes_are_required():
    with pytest.raises(ValueError, match="concrete"):
        visualize(Tensor(2).tile((2, 2)))
