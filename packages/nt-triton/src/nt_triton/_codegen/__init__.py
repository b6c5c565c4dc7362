"""NineToothed kernel IR -> Triton source, in stages.

One entry point, :func:`generate`, returns the finished product
(:class:`GeneratedSource`: source, typed signature, grid, launch checks, tile
footprint).  The stages, in the order a kernel goes through them:

* :mod:`~nt_triton._codegen.inline` parses the application and inlines the
  plain Python helpers it calls;
* :mod:`~nt_triton._codegen.application` rewrites it: tensor references
  become loads and stores (hoisted), attributes become shapes and dtypes
  (:mod:`~nt_triton._codegen.descriptions`), Python objects become Triton code
  (:mod:`~nt_triton._codegen.references`);
* each load and store is addressed (:mod:`~nt_triton._codegen.addressing`:
  bindings -> per-dimension indices and masks) on tiles of power-of-two
  extents (:mod:`~nt_triton._codegen.geometry`) and emitted
  (:mod:`~nt_triton._codegen.memory`: ``tl.load``/``tl.store``);
* :mod:`~nt_triton._codegen.module` assembles the module, the signature and
  the checks.

:mod:`~nt_triton._codegen.naming` spells every identifier the generated code
uses; :mod:`~nt_triton._codegen.context` holds the state the stages share
while one kernel is generated.
"""

from nt_triton._codegen.module import generate
from nt_triton._codegen.product import (
    GeneratedSource,
    ShapeCheck,
    SizeRequirement,
    TileFootprint,
)

__all__ = ["GeneratedSource", "ShapeCheck", "SizeRequirement", "TileFootprint", "generate"]
