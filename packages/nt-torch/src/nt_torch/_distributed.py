"""The ranks of a ``torch.distributed`` job, as the tuner sees them.

:func:`process_group` is PyTorch's :attr:`ninetoothed.runtime.hookspecs.HostReads.group`:
the initialised default process group (``torchrun`` jobs, any backend), else
None.  Tuning together (:func:`nt_triton.tuner.tune_together`) uses it to
gather small Python objects (what each rank is about to tune, its timings).

They travel through the default group's key-value store (:class:`StoreGather`),
not through a collective of its backend: with NCCL, ``all_gather_object``
copies every object through the GPU and synchronises it, and the first NCCL
collective of a job sets its communicator up, which takes hundreds of
milliseconds, on a kernel's first call.  The store is on the CPU and already
connected; where a backend gives none, ``all_gather_object`` is used.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

import torch

from ninetoothed.runtime.hookspecs import RankGroup

__all__ = ["StoreGather", "TorchRanks", "process_group"]

_PREFIX = "ninetoothed/tune"


class StoreGather:
    """All-gathers of picklable objects through a ``torch.distributed.Store``.

    Round ``n`` of rank ``r`` sets the key ``ninetoothed/tune/g/n/r`` and reads every
    rank's key of round ``n``; ``g`` counts the gatherers made over this store by
    this rank (each rank counts alike), so a process group made again over the same
    store never reads the keys of an earlier one.  Each rank deletes its key of round
    ``n - 2`` as it enters round ``n``: having read every key of round ``n - 1``, it
    knows every rank wrote one, so every rank has finished reading round ``n - 2``.
    """

    def __init__(self, store: Any, rank: int, size: int) -> None:
        self.store = store
        self.rank = rank
        self.size = size
        self.round = 0
        self.prefix = f"{_PREFIX}/{store.add(f'{_PREFIX}/made/{rank}', 1)}"
        self._lock = threading.Lock()  # two threads' tunings must not share a round

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order (every rank must call it, in the same order)."""
        with self._lock:
            done, self.round = self.round, self.round + 1
            if done >= 2:
                try:
                    self.store.delete_key(f"{self.prefix}/{done - 2}/{self.rank}")
                except (RuntimeError, NotImplementedError):  # a store that cannot delete
                    pass
            keys = [f"{self.prefix}/{done}/{rank}" for rank in range(self.size)]
            self.store.set(keys[self.rank], pickle.dumps(value))
            self.store.wait(keys)
            return [pickle.loads(self.store.get(key)) for key in keys]  # noqa: S301 - ours


_GATHERS: list[tuple[Any, StoreGather | None]] = []
"""The default group this process gathers over, and its store's gatherer (None: none)."""


class TorchRanks:
    """The default process group: its rank, size and all-gathers of Python objects."""

    @property
    def rank(self) -> int:
        """This process's rank in the default group."""
        return int(torch.distributed.get_rank())

    @property
    def size(self) -> int:
        """The default group's world size."""
        return int(torch.distributed.get_world_size())

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order (every rank must call it): through the
        default group's store, else ``all_gather_object`` (with NCCL the objects then
        travel through the current CUDA device: the launcher calls this inside the
        kernel's device guard, so each rank uses its own GPU)."""
        gather = self._store_gather()
        if gather is not None:
            return gather.all_gather(value)
        gathered: list[Any] = [None] * self.size
        torch.distributed.all_gather_object(gathered, value)
        return gathered

    def _store_gather(self) -> StoreGather | None:
        """The gatherer of the current default group (a new one after a new group)."""
        world = torch.distributed.group.WORLD
        if not _GATHERS or _GATHERS[0][0] is not world:
            store = None
            try:
                store = torch.distributed.distributed_c10d._get_default_store()
            except (AttributeError, RuntimeError, ValueError):  # no store to use
                pass
            gather = None if store is None else StoreGather(store, self.rank, self.size)
            _GATHERS[:] = [(world, gather)]
        return _GATHERS[0][1]


def process_group() -> RankGroup | None:
    """The job's default process group, when ``torch.distributed`` has one."""
    distributed = torch.distributed
    if not distributed.is_available() or not distributed.is_initialized():
        return None
    return TorchRanks()
