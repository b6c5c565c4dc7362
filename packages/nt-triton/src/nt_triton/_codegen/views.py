"""What a name in the application stands for while it is rewritten.

A tensor parameter's name is a :class:`View` of one of its levels (the level
below the grid, at first; ``x[k]`` goes one deeper).  Its attributes lead to
other descriptions: ``x.source`` (:class:`SourceView`), ``x.dtype``
(:class:`ElementType` at the bottom of the hierarchy, else :class:`TypeView`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.spec.parameter import Parameter

__all__ = ["Description", "ElementType", "SourceView", "TypeView", "View"]


@dataclass(frozen=True)
class View:
    """A level of a tensor parameter, as the application sees it."""

    parameter: Parameter
    depth: int
    indices: tuple[tuple[ast.expr, ...], ...] = ()
    """The application's subscripts, one tuple per level below the grid's; one
    more for an element of the tile (see :attr:`element`)."""

    @property
    def level(self) -> Tensor:
        """The arranged level this view is of."""
        return self.parameter.arranged.levels()[self.depth]

    @property
    def element(self) -> tuple[ast.expr, ...] | None:
        """The indices of one element of the tile, when the application indexes a tile.

        Upstream reads ``x[i]`` of a tile (``x[i, j]`` of a two-dimensional
        one) as its element there, a scalar (ntops's embedding reads its
        index tensor so).
        """
        return self.indices[-1] if len(self.indices) == self.depth else None

    @property
    def is_innermost(self) -> bool:
        """Whether the level is a tile (the bottom of the hierarchy)."""
        return self.depth == len(self.parameter.arranged.levels()) - 1


@dataclass(frozen=True)
class SourceView:
    """``x.source``: the unarranged tensor."""

    parameter: Parameter


@dataclass(frozen=True)
class ElementType:
    """``x.dtype`` at the bottom of the hierarchy: the element type."""

    parameter: Parameter


@dataclass(frozen=True)
class TypeView:
    """``x.dtype`` of a hierarchical level: the next level, for ``.shape``/``.dtype``."""

    view: View


Description = View | SourceView | ElementType | TypeView
"""Anything an application name can stand for besides a plain expression."""
