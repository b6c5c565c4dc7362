"""Choosing a kernel's configuration for a call: persisted, or tuned once per key.

:class:`Tuner` keeps one kernel's choices in memory, keyed by the *tuning
key* (sizes, dtypes, unit strides, keyword symbols: what the best tile
depends on).  A key seen for the first time is looked up in the persisted
table (:mod:`nt_triton.cache._tables`), else tuned, under a per-kernel lock so that two
threads' first calls tune once (the second waits and reads the result).

Tuning a call (:meth:`Tuner.tune`):

1. keep the configurations that fit with the call's dtypes and constexpr
   values (:func:`nt_triton._tuning.fits`);
2. compile them in parallel in worker processes, each within a budget
   (:mod:`._workers`): failures and configurations over budget are pruned;
3. load each (out-of-resources errors prune) and run it once;
4. time every survivor briefly (phase A), then the leaders — the best three
   and any within 10 % of the best — longer (phase B), and keep the fastest;
5. persist the choice.

Runs go to the caller's own tensors: every parameter the kernel writes that
it also reads, or whose memory another argument overlaps, is snapshotted
first and restored after each configuration's runs, so the call leaves every
argument as one run would (in-place kernels, one tensor passed twice,
overlapping views).

Under Triton's interpreter nothing is timed: the first configuration of the
space is taken, deterministically, without running any.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.hookspecs import RankGroup
from nt_triton import _space_bounds as space_bounds
from nt_triton import _tuning as tuning
from nt_triton import knobs
from nt_triton._failures import compiler_excerpt
from nt_triton.cache import _tables as table
from nt_triton.tuner import _together as together
from nt_triton.tuner import _trace as trace
from nt_triton.tuner import _workers as workers
from nt_triton.tuner._progress import Progress

__all__ = [
    "LEADERS",
    "LEADER_MARGIN",
    "PHASE_A_RUNS",
    "PHASE_B_MILLISECONDS",
    "Timer",
    "Tuner",
    "TuningCall",
    "configuration_entry",
    "from_entry",
]

Timer = Callable[[Callable[[], None], int], list[float]]
"""``timer(run, count)``: milliseconds of each of ``count`` runs of ``run``."""

Group = Callable[[], RankGroup | None] | None
"""The framework's group of ranks (:attr:`~ninetoothed.runtime.hookspecs.HostReads.group`)."""

Fit = Callable[[], tuple[Mapping[str, int], int]] | None
"""``fit()``: a call's constexpr values and widest element in bytes, which say whether a
configuration fits it (:func:`nt_triton._tuning.fits`); None where the caller cannot say."""

LEADER_MARGIN = 1.10
LEADERS = 3
PHASE_A_RUNS = 5
PHASE_B_MILLISECONDS = 25.0


@dataclass
class TuningCall:
    """What the launcher supplies to tune one call."""

    key: tuple[Any, ...]
    """The tuning key."""
    values: dict[str, int]
    """Constexpr values of the call (sizes tiles depend on)."""
    element_bytes: int
    """The widest element among the call's tensors."""
    job: Callable[[tuning.Configuration], dict[str, Any]]
    """A compile job for a worker (:mod:`._worker`)."""
    launch: Callable[[tuning.Configuration], Callable[[], None]]
    """Compile (a disk hit after a worker compiled it) and load; returns a run-once function."""
    timer: Timer
    restores: list[Callable[[], None]] = field(default_factory=list)
    """Put back what runs overwrite (in-place parameters, overlapping arguments)."""
    capturing: Callable[[], bool] = lambda: False
    in_process: bool = False
    """Compile in this process (the kernel refers to objects a worker cannot import)."""


def configuration_entry(configuration: tuning.Configuration) -> dict[str, Any]:
    """A configuration as the table stores it."""
    return {
        "values": dict(configuration.values),
        "extra": dict(configuration.extra),
        "num_warps": configuration.num_warps,
        "num_stages": configuration.num_stages,
        "maxnreg": configuration.maxnreg,
    }


def from_entry(entry: dict[str, Any]) -> tuning.Configuration:
    """A configuration from a table entry."""
    return tuning.Configuration(
        {k: int(v) for k, v in entry["values"].items()},
        int(entry["num_warps"]),
        int(entry["num_stages"]),
        {k: int(v) for k, v in entry.get("extra", {}).items()},
        None if entry.get("maxnreg") is None else int(entry["maxnreg"]),
    )


class Tuner:
    """One kernel's configuration choices."""

    def __init__(
        self,
        name: str,
        stem: str,
        configurations: Sequence[tuning.Configuration],
        sizing: Any,
        where: str = "",
    ) -> None:
        self.name = name
        self.where = where
        """Where the application is defined (named when no configuration compiles)."""
        self.stem = stem
        self.configurations = tuple(configurations)
        self.sizing = sizing
        self.chosen: dict[tuple[str, tuple[Any, ...]], tuning.Configuration] = {}
        self.last: tuning.Configuration | None = None
        """The configuration of the most recent tuning-key lookup."""
        self.lock = threading.Lock()
        self._warned = False

    def interpreted(self) -> tuning.Configuration:
        """Under the interpreter: the space's first configuration, run once, never timed."""
        self.last = self.configurations[0]
        return self.last

    def choose(
        self,
        key: tuple[Any, ...],
        device_name: str,
        call: Callable[[], TuningCall],
        group: Group = None,
        fit: Fit = None,
    ) -> tuning.Configuration:
        """The configuration for a call: remembered, persisted, or tuned now (``call()``
        supplies what tuning needs; it is built only then), together with the ranks of
        ``group`` where tuning together is on (:mod:`._together`); where nothing is tuned
        (``NINETOOTHED_TUNING`` off or cached without a result, a single configuration),
        the first that fits the call (:meth:`untuned`; ``fit`` says what fits)."""
        # Per device name too: two kinds of GPU in one process do not share their best tiles.
        remembered = (device_name, key)
        chosen = self.chosen.get(remembered)
        if chosen is None:
            with self.lock:
                chosen = self.chosen.get(remembered)
                if chosen is None:
                    chosen = self._choose(key, device_name, call, group, fit)
                    self.chosen[remembered] = chosen
        self.last = chosen
        return chosen

    def _choose(
        self,
        key: tuple[Any, ...],
        device_name: str,
        make_call: Callable[[], TuningCall],
        group: Group,
        fit: Fit,
    ) -> tuning.Configuration:
        mode = knobs.tuning_mode()
        if mode == "off" or len(self.configurations) == 1:
            return self.untuned(fit)
        entry_key = json.dumps([device_name, _versions(), repr(key)])
        entry = table.read(self.stem).get(entry_key)
        # Ranks tuning together agree even where this one holds a result: one rank
        # leaving the collective early would leave the others waiting in it.
        ranks = together.group(group) if mode == "on" else None
        if ranks is not None:
            if entry is None:  # likely to tune: workers start while the ranks agree
                self._start_workers(ranks)
            with trace.span("agree"):
                agreed, entry = together.agree(ranks, (self.name, self.stem, entry_key), entry)
            ranks = ranks if agreed else None
        if entry is not None:
            try:
                return from_entry(entry["configuration"])
            except (KeyError, TypeError, ValueError):
                pass
        if mode == "cached":
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"{self.name}: NINETOOTHED_TUNING=cached and no tuning result for "
                    f"{key} on {device_name}; using the first configuration that fits",
                    stacklevel=3,
                )
            return self.untuned(fit)
        call = make_call()
        if call.capturing():
            raise LaunchError(
                f"{self.name}: a call inside a CUDA graph capture would auto-tune the kernel; "
                "call it once with the same shapes before capturing"
            )
        best, milliseconds = self.tune(call, ranks)
        with trace.span("write"):
            table.write(
                self.stem,
                entry_key,
                {"configuration": configuration_entry(best), "milliseconds": milliseconds},
            )
        return best

    def untuned(self, fit: Fit) -> tuning.Configuration:
        """A configuration chosen without tuning: the space's first that fits the call (a
        space is sized for 2-byte elements, so its first may need more shared memory than
        a GPU has for a float32 call's tiles; the GPU then refuses to load it), else the
        first (``fit`` None: the first)."""
        if fit is None or len(self.configurations) == 1:
            return self.configurations[0]
        values, element_bytes = fit()
        ordered = space_bounds.fitting_first(
            self.configurations, self.sizing, values, element_bytes
        )
        return ordered[0]

    def _start_workers(self, ranks: RankGroup) -> None:
        """Start the compile workers a tuning with ``ranks`` will use (at most one per
        candidate of this rank's share), so that they import Triton while this process
        waits for the other ranks and prepares the call (a kernel that compiles in
        process leaves them for later tunings)."""
        size = together.workers(ranks)
        share = -(-len(self.configurations) // ranks.size)
        if size > 0 and share > 1:
            with trace.span("start workers"):
                workers.pool(min(size, share)).warm()

    def tune(
        self, call: TuningCall, ranks: RankGroup | None = None
    ) -> tuple[tuning.Configuration, float]:
        """Compile, measure and pick; returns the best configuration and its time.

        With ``ranks`` (tuning together), this rank compiles, loads and times its share
        of the candidates; the ranks pick the leaders of phase A among all their
        timings, each times the leaders it holds, and every rank takes the fastest of
        all, the same one.  Every rank makes the same collectives whatever fails.
        """
        candidates = [
            c
            for c in self.configurations
            if tuning.fits(c, self.sizing, call.values, call.element_bytes)
        ] or list(self.configurations)
        indices = list(range(len(candidates)))
        if ranks is not None:  # heaviest first, dealt in turn: each rank's share weighs alike
            weights = [self._compile_weight(call, c) for c in candidates]
            indices = sorted(indices, key=lambda i: -weights[i])
        mine = indices if ranks is None else together.share(indices, ranks)
        progress = Progress(f"{self.name} {call.key}", len(mine))
        pruned: tuple[dict[str, int], dict[str, str]] = ({}, {})
        runs: list[tuple[int, Callable[[], None]]] = []
        first: list[tuple[int, float]] = []
        with _failing_alone(call, ranks, pruned):
            runs = self._ready(call, candidates, sorted(mine), progress, pruned, ranks)
            with trace.span("phase A"):
                first = self._phase_a(call, runs, candidates, progress)
        if ranks is not None:
            with trace.span("leaders"):
                first = together.exchange(ranks, first)
        leaders, count = _leaders(first)
        timed: list[tuple[int, float]] = []
        with _failing_alone(call, ranks, pruned), trace.span("phase B"):
            timed = self._phase_b(call, [r for r in runs if r[0] in leaders], count)
        failures, examples = pruned
        if ranks is not None:
            with trace.span("gather"):
                timed, failures, examples = together.gather(
                    ranks, len(candidates), timed, failures, examples
                )
        if not timed:
            where = f" (the application is {self.where})" if self.where else ""
            raise LaunchError(
                f"{self.name}: no configuration compiled and ran for {call.key} "
                f"({len(candidates)} tried): {failures}{where}. The first failure, where "
                f"Triton's compiler marks the generated line with ^:\n"
                f"{compiler_excerpt(next(iter(examples.values()), '?'))}"
            )
        # Ties go to the earlier candidate, so every rank reads the same winner.
        index, milliseconds = min(timed, key=lambda item: (item[1], item[0]))
        best = candidates[index]
        progress.done(f"{_describe(best)} at {milliseconds:.4f} ms; pruned {failures or 'none'}")
        return best, milliseconds

    def _ready(
        self,
        call: TuningCall,
        candidates: list[tuning.Configuration],
        mine: list[int],
        progress: Progress,
        pruned: tuple[dict[str, int], dict[str, str]],
        ranks: RankGroup | None,
    ) -> list[tuple[int, Callable[[], None]]]:
        """Compile, load and run once the candidates at the indices ``mine`` (``pruned``:
        the failure counts and examples to add to; ``ranks``: the processes tuning
        together, which share this host's compile workers); returns ``(index, run)`` of
        each that ran."""
        failures, examples = pruned
        if not mine:  # more ranks than candidates: this one times none
            return []
        loaded: dict[int, Callable[[], None] | None] = {}

        def load(index: int) -> None:
            """Compile in this process (a disk hit after a worker compiled it) and load;
            None where that fails (out of resources, launch errors: pruned)."""
            try:
                with trace.span("load"):
                    loaded[index] = call.launch(candidates[index])
            except Exception as error:  # noqa: BLE001 - pruned, counted
                loaded[index] = None
                _prune(failures, examples, progress, error)

        size = together.workers(ranks)
        with trace.span("compile"):
            compiled = self._compile(call, candidates, mine, progress, pruned, size, load)
        runs: list[tuple[int, Callable[[], None]]] = []
        for index in compiled:
            if index not in loaded:  # compiled here, not by a worker
                load(index)
            run = loaded[index]
            if run is None:
                continue
            try:
                with trace.span("first run"):
                    run()
                runs.append((index, run))
            except Exception as error:  # noqa: BLE001 - out of resources, launch errors: pruned
                _prune(failures, examples, progress, error)
        _restore(call)
        return runs

    def _compile(
        self,
        call: TuningCall,
        candidates: list[tuning.Configuration],
        mine: list[int],
        progress: Progress,
        pruned: tuple[dict[str, int], dict[str, str]],
        size: int,
        compiled_one: Callable[[int], None],
    ) -> list[int]:
        """The indices among ``mine`` whose candidates compiled within budget (all of them
        when compiling in process), in order, compiled in at most ``size`` worker
        processes; ``compiled_one(index)`` hears of each as it compiles, while the
        others still compile."""
        failures, examples = pruned
        if call.in_process or size == 0 or len(mine) == 1:
            return list(mine)
        # Longest first: the compile likeliest to be slowest never starts last and
        # runs alone while every other worker idles.
        order = sorted(mine, key=lambda i: self._compile_weight(call, candidates[i]), reverse=True)
        jobs = [call.job(candidates[i]) for i in order]
        counts = {"compiled": 0, "pruned": 0}

        def done(position: int, answer: dict[str, Any]) -> None:
            counts["compiled" if answer.get("ok") else "pruned"] += 1
            trace.add("worker compile", float(answer.get("seconds", 0.0)))
            progress.update(compiled=counts["compiled"], pruned=counts["pruned"])
            if answer.get("ok"):
                compiled_one(order[position])

        at_once = min(size, len(jobs))  # a pool grown by an earlier tuning may hold more
        answers = workers.pool(at_once).run(jobs, knobs.compile_budget(), done, at_once)
        for answer in answers:
            if not answer.get("ok"):
                reason = str(answer.get("error", "?")).split(":")[0]
                failures[reason] = failures.get(reason, 0) + 1
                examples.setdefault(reason, str(answer.get("error", "?")))
        ok = {i for i, answer in zip(order, answers) if answer.get("ok")}
        return [i for i in mine if i in ok]

    def _compile_weight(self, call: TuningCall, configuration: tuning.Configuration) -> float:
        """How long ``configuration`` is likely to compile, relative to the others: the
        bytes of its tiles in registers, and of its pipeline's copies of what loops load
        (larger programs take LLVM and ``ptxas`` longer)."""
        tiles = self.sizing.tiles({**call.values, **configuration.kwargs()})
        registers = tiles.registers(call.element_bytes, 1) * 32 * 4  # one warp's 32 threads
        return float(registers + tiles.pipelined * call.element_bytes * configuration.num_stages)

    def _phase_a(
        self,
        call: TuningCall,
        runs: list[tuple[int, Callable[[], None]]],
        candidates: list[tuning.Configuration],
        progress: Progress,
    ) -> list[tuple[int, float]]:
        """Every run timed briefly: ``(candidate index, median milliseconds)``."""
        first: list[tuple[int, float]] = []
        best = float("inf")
        for count, (index, run) in enumerate(runs):
            milliseconds = statistics.median(call.timer(run, PHASE_A_RUNS))
            _restore(call)
            first.append((index, milliseconds))
            if milliseconds < best:
                best = milliseconds
                progress.update(best=f"{milliseconds:.4f} ms {_describe(candidates[index])}")
            progress.update(measured=count + 1)
        return first

    def _phase_b(
        self, call: TuningCall, leaders: list[tuple[int, Callable[[], None]]], count: int
    ) -> list[tuple[int, float]]:
        """The leaders timed longer (``count`` runs each): ``(index, median milliseconds)``."""
        final = []
        for index, run in leaders:
            final.append((index, statistics.median(call.timer(run, count))))
            _restore(call)
        return final


def _leaders(first: list[tuple[int, float]]) -> tuple[set[int], int]:
    """The candidates phase B times (the best :data:`LEADERS` of phase A's timings and
    any within :data:`LEADER_MARGIN` of the best), and how many runs each gets."""
    if not first:
        return set(), 0
    ordered = sorted(first, key=lambda item: (item[1], item[0]))
    best = ordered[0][1]
    leaders = {index for index, milliseconds in ordered if milliseconds <= best * LEADER_MARGIN}
    leaders |= {index for index, _ in ordered[:LEADERS]}
    return leaders, int(min(100, max(10, PHASE_B_MILLISECONDS / max(best, 1e-3))))


@contextlib.contextmanager
def _failing_alone(
    call: TuningCall, ranks: RankGroup | None, pruned: tuple[dict[str, int], dict[str, str]]
) -> Iterator[None]:
    """Alone, a failure is raised; tuning together, it is counted among ``pruned`` and
    this rank goes on to the collectives (one rank's failure must reach the others)."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - counted, answered to every rank
        if ranks is None:
            raise
        with contextlib.suppress(Exception):  # the arguments as one run leaves them
            _restore(call)
        failures, examples = pruned
        _count(failures, error)
        examples.setdefault(type(error).__name__, f"{type(error).__name__}: {error}")


def _restore(call: TuningCall) -> None:
    for restore in call.restores:
        restore()


def _prune(
    failures: dict[str, int], examples: dict[str, str], progress: Progress, error: BaseException
) -> None:
    """Count a candidate that failed to load or run, keeping the first message of each kind."""
    _count(failures, error)
    examples.setdefault(type(error).__name__, f"{type(error).__name__}: {error}")
    progress.update(pruned=progress.pruned + 1)


def _count(failures: dict[str, int], error: BaseException) -> None:
    name = type(error).__name__
    failures[name] = failures.get(name, 0) + 1


def _describe(configuration: tuning.Configuration) -> str:
    values = " ".join(f"{k}={v}" for k, v in configuration.values.items())
    cap = "" if configuration.maxnreg is None else f" r{configuration.maxnreg}"
    return f"{values} w{configuration.num_warps} s{configuration.num_stages}{cap}"


def _versions() -> list[str]:
    import triton

    from nt_triton._version import VERSION

    return [f"ninetoothed {VERSION}", f"triton {triton.__version__}"]
