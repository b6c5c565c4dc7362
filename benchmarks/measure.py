"""How the benchmark measures: clocks, the machine's two ceilings, first calls,
correctness, and interleaved rounds of timings.

On a GPU a time is ``triton.testing.do_bench``'s median (CUDA events, the L2
flushed before each call), or, with :class:`LoopClock`, the time per call of
a loop of back-to-back calls.  Under Triton's interpreter there are no events:
the CPU clock stands in, so that the whole harness runs on a machine without
a GPU (the numbers then mean nothing).
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Clock:
    """Median milliseconds of one call of a function, and a device barrier."""

    device: str
    warmup_ms: float = 25.0
    rep_ms: float = 100.0

    def sync(self) -> None:
        """Wait for the device's queued work."""
        if self.device == "cuda":
            torch.cuda.synchronize()

    def median_ms(self, fn: Callable[[], object]) -> float:
        """The median time of ``fn()`` in milliseconds."""
        if self.device == "cuda":
            import triton.testing

            return float(
                triton.testing.do_bench(
                    fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median"
                )
            )
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)


@dataclass(frozen=True)
class LoopClock(Clock):
    """Milliseconds per call of ``calls`` back-to-back calls, between two CUDA events.

    What a model's loop sees: a call whose host work outlasts its kernels
    costs its host time, one whose kernels outlast the host their time; no L2
    flush between calls.  ``do_bench`` flushes the L2 before each call, so a
    call's host time shorter than the flush hides behind it and a longer one
    shows: a mix of the two.  :func:`interleaved_rounds` takes the median of
    the rounds (each round one loop, after ``warmup`` calls)."""

    calls: int = 200
    warmup: int = 20

    def median_ms(self, fn: Callable[[], object]) -> float:
        """Milliseconds per call of one loop of ``calls`` calls (the name is
        :class:`Clock`'s: the median is over rounds)."""
        for _ in range(self.warmup):
            fn()
        self.sync()
        if self.device != "cuda":
            began = time.perf_counter()
            for _ in range(self.calls):
                fn()
            return (time.perf_counter() - began) * 1e3 / self.calls
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(self.calls):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / self.calls


def device_or_refusal() -> str | None:
    """Where a configuration sweep runs: ``"cuda"``, ``"cpu"`` under Triton's interpreter
    (the harness only, with ``--small``), or None, having said why, without either."""
    interpreting = os.environ.get("TRITON_INTERPRET") == "1"
    if not (torch.cuda.is_available() or interpreting):
        print("no CUDA GPU: run on a GPU, or with TRITON_INTERPRET=1 --small", file=sys.stderr)
        return None
    return "cuda" if torch.cuda.is_available() and not interpreting else "cpu"


def own_code(function: Callable[..., object], label: str) -> Callable[..., object]:
    """A copy of ``function`` with a code object of its own, named ``<name>_<label>``.

    Dynamo keeps its compiled entries per code object: two compiled variants of
    one function (two modes, two settings) share one cache, and each call
    checks the guards of the other's entry first.  The copy shares the
    original's globals, defaults and closure, so it computes the same."""
    assert isinstance(function, types.FunctionType), function
    name = f"{function.__name__}_{label}"
    names = {"co_name": name}
    if hasattr(function.__code__, "co_qualname"):  # Python 3.11 and later
        names["co_qualname"] = name
    code = function.__code__.replace(**names)
    copy = types.FunctionType(
        code, function.__globals__, name, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


def _randn(clock: Clock, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float16, device=clock.device)


def copy_bandwidth(clock: Clock, small: bool = False) -> float:
    """Device-to-device copy bandwidth, bytes read plus written per second."""
    src = _randn(clock, 1 << (16 if small else 28))  # 512 MiB: far past any cache
    dst = torch.empty_like(src)
    ms = clock.median_ms(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / (ms * 1e-3)


def matmul_rate(clock: Clock, small: bool = False) -> float:
    """FLOP/s of torch's (cuBLAS) float16 ``mm`` at 8192^3, random data."""
    n = 64 if small else 8192
    a, b = _randn(clock, n, n), _randn(clock, n, n)
    ms = clock.median_ms(lambda: torch.mm(a, b))
    return 2.0 * n**3 / (ms * 1e-3)


def relative_error(actual: object, expected: object) -> float:
    """``||actual - expected|| / ||expected||`` in float64, the worst over tuple
    outputs; NaN when ``actual`` has NaN (an unwritten or wrong element)."""
    if isinstance(expected, tuple):
        return max(relative_error(a, e) for a, e in zip(actual, expected, strict=True))
    if not torch.is_tensor(actual) or actual.shape != expected.shape:
        return float("nan")
    difference = torch.linalg.vector_norm((actual.double() - expected.double()).flatten())
    norm = torch.linalg.vector_norm(expected.double().flatten())
    return (difference / norm.clamp_min(1e-30)).item()


@dataclass
class Result:
    """What one implementation did on one task: its first call (seconds, with
    compilation and tuning), its error against the reference, its times (median
    ms of each round) or why it has none."""

    source: str
    first_call_s: float | None = None
    error: float | None = None
    times_ms: list[float] = field(default_factory=list)
    failure: str | None = None

    @property
    def valid(self) -> bool:
        """Ran and matched the reference: only then is it timed and compared."""
        return self.failure is None

    def stats(self) -> dict[str, float] | None:
        """Min, median and max over the rounds."""
        if not self.times_ms:
            return None
        return {
            "min": min(self.times_ms),
            "median": statistics.median(self.times_ms),
            "max": max(self.times_ms),
        }


def short(error: BaseException) -> str:
    """One line for a table cell."""
    first = (str(error).strip().splitlines() or [""])[0]
    text = f"{type(error).__name__}: {first}".strip()
    return text[:117] + "..." if len(text) > 120 else text


class TimeLimit:
    """Raise ``TimeoutError`` in the main thread after ``seconds`` (SIGALRM;
    nothing elsewhere).  A compiler busy in native code is interrupted only
    when it returns to Python, but a tuning loop over many configurations is
    stopped between two of them."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.active = seconds > 0 and threading.current_thread() is threading.main_thread()

    def _expire(self, signum: int, frame: object) -> None:
        raise TimeoutError(f"first call still running after {self.seconds:g} s")

    def __enter__(self) -> TimeLimit:
        if self.active:
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def first_call(
    fn: Callable,
    inputs: tuple,
    expected: object,
    tolerance: float,
    clock: Clock,
    source: str,
    limit_s: float = 0,
) -> Result:
    """Call ``fn`` once (within ``limit_s`` seconds, when given), timed from call
    to finished device work; check the output against ``expected``.  Never
    raises: a failure is recorded."""
    result = Result(source)
    try:
        with TimeLimit(limit_s):
            clock.sync()
            start = time.perf_counter()
            output = fn(*inputs)
            clock.sync()
            result.first_call_s = time.perf_counter() - start
        result.error = relative_error(output, expected)
    except Exception as error:  # one implementation failing must not end the run
        result.failure = "error: " + short(error)
        return result
    if not result.error <= tolerance:  # NaN fails too
        result.failure = f"WRONG (error {result.error:.1e})"
    return result


def interleaved_rounds(
    functions: dict[str, Callable[[], object]], clock: Clock, rounds: int
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Time every function once per round, rotating which goes first, so that
    drift in the machine's state (clocks, temperature) falls on all of them.
    Returns the times and, for a function that raised, why (it is then dropped)."""
    names = list(functions)
    times: dict[str, list[float]] = {name: [] for name in names}
    failures: dict[str, str] = {}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            if name in failures:
                continue
            try:
                times[name].append(clock.median_ms(functions[name]))
            except Exception as error:  # recorded; the others go on
                failures[name] = "error while timing: " + short(error)
    return times, failures
