"""Upstream NineToothed's inspection API, on top of the reference semantics.

:mod:`.eval` holds upstream's ``eval`` and ``subs`` (arrangements as arrays of
flat source indices; ``Tensor.eval`` and ``Tensor.subs`` call them),
:mod:`.debugging` upstream's ``simulate_arrangement`` and
:mod:`.visualization` its pictures.  All three answer from
:mod:`ninetoothed.arrangement.reference`, our reference semantics, with no
GPU.  Upstream's module paths ``ninetoothed.debugging`` and
``ninetoothed.visualization`` re-export them.

The package imports none of its modules.
"""

__all__: list[str] = []
