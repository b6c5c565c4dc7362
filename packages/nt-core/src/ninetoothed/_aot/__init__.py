"""Ahead-of-time compilation, the backend-independent part (internal).

* :mod:`.request` -- ``make``'s ahead-of-time options (``caller``,
  ``output_dir``, ``target``), checked, and what a C library can take;
* :mod:`.files` -- the output directory, fingerprints and descriptions on disk;
* :mod:`.kernel` -- the Python callable over a built library;
* :mod:`.build` -- ``ninetoothed.build``: variants, keys, tuning, rebuilds.

The compiling itself is a plugin's (:class:`ninetoothed.runtime.hookspecs.AheadOfTimeBuilder`,
nt-triton's for ``caller="cuda"``); the C interface is :mod:`ninetoothed.aot`.
"""

__all__: list[str] = []
