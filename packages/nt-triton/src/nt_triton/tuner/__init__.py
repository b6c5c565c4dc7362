"""The auto-tuner: per-call choice, parallel budgeted compiles, persisted results.

:class:`~nt_triton.tuner.core.Tuner` chooses a kernel's configuration for a
call (:mod:`.core`); :mod:`.workers` compiles configurations in worker
processes within a budget; :mod:`.table` persists results across processes
and exports them for deployment; :mod:`.progress` shows what tuning does.
"""

from nt_triton.tuner.core import Tuner, TuningCall
from nt_triton.tuner.table import clear, export_table, import_table

__all__ = ["Tuner", "TuningCall", "clear", "export_table", "import_table"]
