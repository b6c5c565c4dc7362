"""The ranks of a Paddle distributed job, as the tuner sees them.

:func:`process_group` is Paddle's :attr:`ninetoothed.runtime.hookspecs.HostReads.group`:
the job's global group once ``paddle.distributed.init_parallel_env`` has run
(jobs started with ``python -m paddle.distributed.launch``), else None.
Tuning together (:func:`nt_triton.tuner.tune_together`) uses it to gather
small Python objects (what each rank is about to tune, its timings).
"""

from __future__ import annotations

from typing import Any

import paddle

from ninetoothed.runtime.hookspecs import RankGroup

__all__ = ["PaddleRanks", "process_group"]


class PaddleRanks:
    """The global group: its rank, size and ``all_gather_object``."""

    @property
    def rank(self) -> int:
        """This process's rank in the job."""
        return int(paddle.distributed.get_rank())

    @property
    def size(self) -> int:
        """How many processes the job has."""
        return int(paddle.distributed.get_world_size())

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order (a collective over the global group)."""
        gathered: list[Any] = []
        paddle.distributed.all_gather_object(gathered, value)
        return gathered


def process_group() -> RankGroup | None:
    """The job's global group, once Paddle's parallel environment is initialised."""
    distributed = paddle.distributed
    if not distributed.is_available() or not distributed.is_initialized():
        return None
    return PaddleRanks()
