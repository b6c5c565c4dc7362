"""The ranks of a ``torch.distributed`` job, as the tuner sees them.

:func:`process_group` is PyTorch's :attr:`ninetoothed.runtime.hookspecs.HostReads.group`:
the initialised default process group (``torchrun`` jobs, any backend), else
None.  Tuning together (:func:`nt_triton.tuner.tune_together`) uses it to
gather small Python objects (what each rank is about to tune, its timings).
"""

from __future__ import annotations

from typing import Any

import torch

from ninetoothed.runtime.hookspecs import RankGroup

__all__ = ["TorchRanks", "process_group"]


class TorchRanks:
    """The default process group: its rank, size and ``all_gather_object``."""

    @property
    def rank(self) -> int:
        """This process's rank in the default group."""
        return int(torch.distributed.get_rank())

    @property
    def size(self) -> int:
        """The default group's world size."""
        return int(torch.distributed.get_world_size())

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order (a collective over the default group).

        With NCCL the objects travel through the current CUDA device: the launcher
        calls this inside the kernel's device guard, so each rank uses its own GPU.
        """
        gathered: list[Any] = [None] * self.size
        torch.distributed.all_gather_object(gathered, value)
        return gathered


def process_group() -> RankGroup | None:
    """The job's default process group, when ``torch.distributed`` has one."""
    distributed = torch.distributed
    if not distributed.is_available() or not distributed.is_initialized():
        return None
    return TorchRanks()
