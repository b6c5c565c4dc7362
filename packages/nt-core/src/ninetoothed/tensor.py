"""Upstream NineToothed's module path of :class:`Tensor`.

The tensor is defined in :mod:`ninetoothed.arrangement.tensor`; this module
keeps upstream's ``from ninetoothed.tensor import Tensor`` working.
"""

from ninetoothed.arrangement.tensor import Tensor

__all__ = ["Tensor"]
