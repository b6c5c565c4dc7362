"""NineToothed's Triton code generator.

Turns a validated :class:`ninetoothed.spec.kernel_spec.KernelSpec` into a Triton kernel
and launches it.  It is found by ``ninetoothed`` through the ``ninetoothed``
entry-point group (see :mod:`nt_triton.plugin`); users do not import it
directly.  The modules, in the order a kernel goes through them:

* :mod:`nt_triton.codegen` -- IR -> Triton source, typed signature
  (:mod:`nt_triton.abi`), grid, launch checks, tile footprint;
* :mod:`nt_triton.tuning` -- the auto-tuning space; :mod:`nt_triton.tuner`
  -- choosing a configuration per call (parallel budgeted compiles, timing,
  persisted results);
* :mod:`nt_triton.host` -- the per-call host function, generated;
* :mod:`nt_triton.backend` -- runs the above and writes the file to
  :mod:`nt_triton.cache`;
* :mod:`nt_triton.kernel` -- :class:`~nt_triton.kernel.TritonKernel`, what
  adapters launch (``prepare``/``launch``);
* :mod:`nt_triton.launch` -- the per-call fast path: compiled
  specialisations launched through Triton's raw launcher;
* :mod:`nt_triton.trampoline` -- kernels behind another launcher's parameter
  order; :mod:`nt_triton.knobs` -- environment knobs.
"""

__version__ = "0.1.0"
