"""Where NineToothed keeps what it generates, and how to size and clear it.

One root (:func:`root`) holds, per kind:

* ``sources``: the generated Triton modules (and trampolines), one file per
  content hash, in the root itself (:mod:`._sources`);
* ``index``: the kernel-reuse index, ``index/<fingerprint>.pickle``: what
  generating a kernel produced, with its compiled Python code, so ``make`` of
  a kernel seen before skips code generation (:mod:`._reuse`);
* ``tuning``: the tuning tables, ``tuning/<kernel file>.json``
  (:mod:`._tables`; :mod:`nt_triton.tuner` exports and imports them).

Compiled GPU binaries stay in Triton's own cache (kind ``triton``, reported
by :func:`info`, never cleared here): the fast path compiles through
``triton.compile`` so that its kernels, ``fn[grid](...)`` launches and the
tuner's compile workers share Triton's entries.  Each process also keeps
in-process memos of what it loaded (:func:`memos`; :mod:`._memos`).

The root is ``NINETOOTHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/ninetoothed``,
else ``~/.cache/ninetoothed`` (:func:`nt_triton.knobs.cache_dir`); see
``docs/cache.md``.  From a shell: ``ninetoothed cache info`` and
``ninetoothed cache clear [--kind KIND]``.
"""

from nt_triton.cache._layout import root
from nt_triton.cache._memos import MemoSize
from nt_triton.cache._memos import sizes as memos
from nt_triton.cache._usage import CLEARABLE, KINDS, Usage, clear, info, triton_directory

__all__ = [
    "CLEARABLE",
    "KINDS",
    "MemoSize",
    "Usage",
    "clear",
    "info",
    "memos",
    "root",
    "triton_directory",
]
