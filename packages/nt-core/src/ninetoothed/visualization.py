"""Upstream NineToothed's module path of :func:`visualize` and :func:`visualize_arrangement`.

The pictures are drawn by :mod:`ninetoothed.compat.visualization`; this
module keeps upstream's ``ninetoothed.visualization`` working.
"""

from ninetoothed.compat.visualization import (
    LevelTiles,
    ParameterTiles,
    arrangement_tiles,
    visualize,
    visualize_arrangement,
)

__all__ = [
    "LevelTiles",
    "ParameterTiles",
    "arrangement_tiles",
    "visualize",
    "visualize_arrangement",
]
