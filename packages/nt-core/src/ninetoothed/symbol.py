"""Upstream NineToothed's module path of :class:`Symbol` and :func:`block_size`.

The symbols are defined in :mod:`ninetoothed.arrangement.symbol`; this module
keeps upstream's ``from ninetoothed.symbol import Symbol`` working.
"""

from ninetoothed.arrangement.symbol import Symbol, block_size

__all__ = ["Symbol", "block_size"]
