"""Tuning once per job: the processes of a job split each tuning between them.

Every rank of a ``torchrun`` job calls the same kernels with the same shapes,
so on its own each would tune each new specialisation: N times the first
call's cost, and ranks that may pick different configurations (timings
differ a little from GPU to GPU) and so round differently.  Switched on
(:func:`tune_together`, or ``NINETOOTHED_TUNE_TOGETHER=1``) and given the
framework's group of ranks (:attr:`ninetoothed.runtime.hookspecs.HostReads.group`:
PyTorch's initialised default process group, Paddle's global group once its
parallel environment is initialised), the tuner instead

1. gathers what every rank is about to tune (:func:`agree`): the kernel, the
   tuning key and the device model, and any result its tuning table already
   holds; if one does, every rank takes the first such result;
2. otherwise deals the candidate configurations out, heaviest to compile
   first, one to each rank in turn (:func:`share`); each rank compiles,
   loads and briefly times its share (phase A), with its part of the
   compile workers that one process alone would start on its host
   (:func:`nt_triton.knobs.compile_workers`);
3. gathers every rank's phase-A timings (:func:`exchange`): every rank
   picks the same leaders from all of them, and times longer (phase B) the
   leaders it holds;
4. gathers every rank's phase-B timings (:func:`gather`): each rank takes
   the fastest of all, the same one, and writes it to its tuning table.

So the ranks of a job never do more than one process alone would: the
host's compiles run on as many workers as one process would start (more
workers compile no faster once the host's CPUs are busy, and each one's
start costs CPU time the compiles need), and each rank loads and times
only part of the candidates, phase B included.

Collectives need every rank: the ranks must make their first calls of each
kernel and tuning key in the same order, as SPMD programs do.  Where they do
not (one rank's last batch is smaller, threads interleave), the gathered keys
differ: every rank sees it in the same collective, warns once, and tunes on
its own from then on, so no rank ever waits in a collective the others will
not join.  A kernel that only some ranks call waits for the others: leave
tuning together off for such programs.  No file lock is held across a
collective (:mod:`nt_triton.cache._locks`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ninetoothed.runtime.hookspecs import RankGroup
from nt_triton import knobs

__all__ = [
    "agree",
    "enabled",
    "exchange",
    "gather",
    "group",
    "launcher_workers",
    "local_index",
    "share",
    "sharing",
    "tune_together",
    "workers",
]

_T = TypeVar("_T")

_SWITCH: list[bool | None] = [None]
"""What :func:`tune_together` set (None: the environment decides)."""

_DISAGREED: list[str] = []
"""Why this process stopped tuning together (empty: it has not)."""


def tune_together(enabled: bool = True) -> None:
    """Make the processes of a job tune each new kernel specialisation together
    (``enabled=False``: each on its own, the default).

    Takes effect where the framework has a group of processes: PyTorch's
    default process group, once ``torch.distributed.init_process_group`` has
    run; Paddle's global group, once ``paddle.distributed.init_parallel_env``
    has run.  Every rank must switch it on, before its first kernel call (or set
    ``NINETOOTHED_TUNE_TOGETHER=1`` for the whole job).
    """
    _SWITCH[0] = bool(enabled)


def enabled() -> bool:
    """Whether this process tunes together with its job's others when it can."""
    switch = _SWITCH[0]
    return knobs.tune_together() if switch is None else switch


def group(framework: Callable[[], RankGroup | None] | None) -> RankGroup | None:
    """The group of ranks to tune with: the framework's (``framework()``,
    :attr:`~ninetoothed.runtime.hookspecs.HostReads.group`), when tuning together is
    on, the group has other ranks, and the ranks have never disagreed."""
    if framework is None or _DISAGREED or not enabled():
        return None
    ranks = framework()
    return ranks if ranks is not None and ranks.size > 1 else None


def sharing(ranks: RankGroup | None) -> int:
    """How many processes of the job tune at once on this host (they share its CPUs):
    what the launcher says (``LOCAL_WORLD_SIZE``: ``torchrun``; ``PADDLE_LOCAL_SIZE``:
    ``paddle.distributed.launch``), else every rank of the job."""
    if ranks is None:
        return 1
    local = _local_size()
    try:
        return max(1, min(ranks.size, int(local or ranks.size)))
    except ValueError:
        return ranks.size


def local_index(ranks: RankGroup | None) -> int:
    """This process's place among the :func:`sharing` processes of its host (``LOCAL_RANK``:
    ``torchrun``; ``PADDLE_LOCAL_RANK``: Paddle's launcher; else its rank modulo them)."""
    if ranks is None:
        return 0
    local = _local_rank()
    count = sharing(ranks)
    try:
        return int(local) % count if local else ranks.rank % count
    except ValueError:
        return ranks.rank % count


def workers(ranks: RankGroup | None) -> int:
    """The compile workers this process tunes with: its part of what one process alone
    would start on its host (:func:`nt_triton.knobs.compile_workers`)."""
    return knobs.compile_workers(sharing(ranks), local_index(ranks))


def launcher_workers() -> int:
    """The compile workers this process would tune with, before its group of ranks is
    known (:mod:`._early`): its part of the host's by what the launcher says of the
    processes on this host and its place among them, all of them without a launcher."""
    size, rank = _local_size(), _local_rank()
    try:
        count = max(1, int(size)) if size else 1
        return knobs.compile_workers(count, int(rank) % count if rank else 0)
    except ValueError:
        return knobs.compile_workers()


def _local_size() -> str | None:
    """The processes of the job on this host, as its launcher says (``LOCAL_WORLD_SIZE``:
    ``torchrun``; ``PADDLE_LOCAL_SIZE``: ``paddle.distributed.launch``)."""
    return os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("PADDLE_LOCAL_SIZE")


def _local_rank() -> str | None:
    """This process's place among them, as its launcher says (``LOCAL_RANK``,
    ``PADDLE_LOCAL_RANK``)."""
    return os.environ.get("LOCAL_RANK") or os.environ.get("PADDLE_LOCAL_RANK")


def agree(ranks: RankGroup, what: tuple[Any, ...], entry: Any) -> tuple[bool, Any]:
    """Gather what each rank is about to tune (``what``) and the table entry it holds;
    returns ``(together, entry)``: whether every rank tunes the same thing (else each
    tunes alone from now on, ``entry`` its own), and the first rank's entry found."""
    answers = ranks.all_gather((what, entry))
    if any(answer[0] != what for answer in answers):
        _disagreed(ranks, [answer[0] for answer in answers])
        return False, entry
    return True, next((answer[1] for answer in answers if answer[1] is not None), None)


def share(candidates: Sequence[_T], ranks: RankGroup) -> list[_T]:
    """This rank's share of the candidates (in the order given, heaviest first): every
    ``size``-th one from its rank."""
    return list(candidates[ranks.rank :: ranks.size])


def exchange(ranks: RankGroup, timed: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Every rank's ``(candidate index, milliseconds)``, in rank order; the same on
    every rank."""
    answers = ranks.all_gather(timed)
    return [(int(index), float(milliseconds)) for one in answers for index, milliseconds in one]


def gather(
    ranks: RankGroup,
    count: int,
    timed: list[tuple[int, float]],
    failures: dict[str, int],
    examples: dict[str, str],
) -> tuple[list[tuple[int, float]], dict[str, int], dict[str, str]]:
    """Every rank's timings (``(index among the count candidates, milliseconds)``),
    pruning counts and failure examples, merged; the same on every rank."""
    answers = ranks.all_gather((count, timed, failures, examples))
    merged: list[tuple[int, float]] = []
    counts: dict[str, int] = {}
    messages: dict[str, str] = {}
    for their_count, their_timed, their_failures, their_examples in answers:
        if their_count != count:
            raise RuntimeError(
                f"ranks tuning together saw {their_count} and {count} candidate configurations"
            )
        merged.extend((int(index), float(milliseconds)) for index, milliseconds in their_timed)
        for name, number in their_failures.items():
            counts[name] = counts.get(name, 0) + number
        for name, text in their_examples.items():
            messages.setdefault(name, text)
    return merged, counts, messages


def _disagreed(ranks: RankGroup, seen: list[Any]) -> None:
    """Stop tuning together in this process, saying why (every rank does, at once)."""
    described = "; ".join(f"rank {rank}: {what[0]} {what[2]}" for rank, what in enumerate(seen))
    # Every rank saw the same answers, so every rank stops here, at once.
    _DISAGREED.append(described)
    warnings.warn(
        f"ninetoothed: the ranks tuning together were about to tune different things "
        f"({described[:600]}); each tunes on its own from now on (tuning together needs "
        "every rank to make the same first calls in the same order)",
        RuntimeWarning,
        stacklevel=6,
    )
