"""NineToothed's Triton code generator.

Turns a validated :class:`ninetoothed.ir.KernelSpec` into Triton source code,
a launch grid and an auto-tuning space.  It is found by ``ninetoothed`` through
the ``ninetoothed`` entry-point group (see :mod:`nt_triton.plugin`); users do
not import it directly.
"""

__version__ = "0.1.0"
