"""Upstream NineToothed's module path of :func:`simulate_arrangement`.

The function is defined in :mod:`ninetoothed.compat.debugging`; this module
keeps upstream's ``from ninetoothed.debugging import simulate_arrangement``
working.
"""

from ninetoothed.compat.debugging import simulate_arrangement

__all__ = ["simulate_arrangement"]
