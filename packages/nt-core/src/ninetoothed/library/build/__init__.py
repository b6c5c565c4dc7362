"""The kernel library as a C library: ``libninetoothed_ops.so`` and ``ninetoothed_ops.h``.

::

    python -m ninetoothed.library.build --ops mm,sdpa --dtypes float16,bfloat16 \\
        --target sm_90 --out DIR              # or: ninetoothed build-library ...

builds every forward op of :mod:`ninetoothed.library` (or those named) into
one shared library with a plain C API (``ninetoothed_ops_<op>(stream,
tensors..., output)``: tensors in, a status out, the ops' argument checks in
C with their messages through ``ninetoothed_last_error()``), tuned on the GPU
for the target (without one: each kernel's first configuration), and a CMake
package so that ``find_package(NineToothedOps)`` works.  What each function
supports is documented in the generated header and in ``docs/aot.md``.

* :mod:`.catalogue` -- each op's kernels and their variants;
* :mod:`.variants` -- those variants as the builder takes them;
* :mod:`.header`, :mod:`.cmake` -- the C API's header, the CMake package;
* :mod:`.library` -- the build; :mod:`.command` -- the command line.
"""

from ninetoothed.library.build.catalogue import ALIASES, OPS, Options
from ninetoothed.library.build.command import add_arguments, main, run
from ninetoothed.library.build.library import LIBRARY, build_library

__all__ = [
    "ALIASES",
    "LIBRARY",
    "OPS",
    "Options",
    "add_arguments",
    "build_library",
    "main",
    "run",
]
