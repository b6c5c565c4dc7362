"""The auto-tuner: per-call choice, parallel budgeted compiles, persisted results.

Public here: moving the persisted results between machines for deployment
(:func:`export_table`, :func:`import_table`), forgetting them (:func:`clear`),
letting the ranks of a job tune together (:func:`tune_together`),
and the command line ``python -m nt_triton.tuner`` (:mod:`.__main__`).  The
tables themselves live in NineToothed's cache (:mod:`nt_triton.cache`, kind
``tuning``).

Internal: :mod:`._core` chooses a kernel's configuration for a call;
:mod:`._together` splits a tuning between a job's ranks; :mod:`._workers`
compiles configurations in worker processes (:mod:`._worker`) within a
budget; :mod:`._progress` shows what tuning does.
"""

from nt_triton.cache._tables import clear, export_table, import_table
from nt_triton.tuner._together import tune_together

__all__ = ["clear", "export_table", "import_table", "tune_together"]
