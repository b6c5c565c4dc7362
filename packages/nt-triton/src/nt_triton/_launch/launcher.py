"""The per-call fast path: a generated function per kernel and framework.

A call's hot path reads the arguments, finds the call's *plan* and launches
it through the compiled kernel's raw launcher (:mod:`nt_triton._launch.compiled`),
past ``JITFunction.run``.  A plan is everything a call needs that follows
from what specialises it — every tensor's shape, strides, dtype and device,
whether all pointers are 16-byte aligned, the scalar arguments' Triton
classes, the keyword arguments — : the tuned or pinned configuration, the
grid, the shape checks (done), the 64-bit decision, the compiled kernel
loaded on the device, and a launch function with every int argument bound.
So auto-tuned, pinned and constexpr-given kernels cost the same per call.

Two lookups, cheapest first:

* the most recently used plan, checked by a *guard* the framework may
  supply (PyTorch: one C++ call comparing every tensor's dtype, device,
  sizes and strides with the plan's; ``nt_torch``), plus pointer alignment,
  keywords and scalar classes;
* a dict keyed by the same facts read from the tensors.

Anything else — new shapes, wrong arguments, another framework's tensors —
raises or misses inside the ``try`` and goes to the miss path: the adapter's
full validation (``bind_call``, the generated host function with its shape
checks and clear :class:`~ninetoothed.errors.LaunchError` s), tuning,
compiling, and a new plan (:meth:`FastLauncher.launch_bound`).  The hot
function is Python source generated once per kernel from its signature
(like the host function: :mod:`.hot_source`) with the framework's reads
(:mod:`.reads`); tuning a call is :mod:`.tuning_calls`' part.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.binding import BoundCall
from ninetoothed.runtime.hookspecs import HostReads, Miss
from nt_triton import _failures as failures
from nt_triton import _tuning as tuning
from nt_triton._abi import ParameterKind
from nt_triton._launch import compiled, lean
from nt_triton._launch.hot_source import hot_source, pinned_source, scalar_value
from nt_triton._launch.reads import reader
from nt_triton._launch.target import LaunchTarget
from nt_triton._launch.tuning_calls import (
    MissedCall,
    constexpr_scalars,
    fit_of,
    run_time_scalars,
    tuning_call,
    tuning_key,
)
from nt_triton.tuner import _early as early
from nt_triton.tuner._core import TuningCall

__all__ = ["PLAN_LIMIT", "FastLauncher", "Plan"]

Plan = tuple[Any, ...]
"""``(guard, alignment, keywords, launch, device, scalar classes, overlap bounds)``: the
bounds are :meth:`ninetoothed.runtime.aliasing.Aliasing.bounds`, the distances between
pointers at which arguments would share memory a written one has."""


PLAN_LIMIT = 1024
"""Plans one kernel remembers; beyond it they are forgotten all at once.  Calls whose
shapes keep changing (attention over a growing key/value cache: one new length per
token) would otherwise add a plan per call for as long as the process runs."""


def _never(*tensors: Any) -> bool:
    return False


_EMPTY: Plan = (_never, -1, None, None, -1, None, ())


class FastLauncher:
    """One kernel's fast path for one framework: :attr:`call` is the hot function."""

    def __init__(
        self,
        kernel: LaunchTarget,
        reads: HostReads,
        miss: Miss,
    ) -> None:
        self.kernel = kernel
        self.reads = reads
        self.miss = miss
        """Where calls without a plan go: ``miss(args, kwargs)`` (full validation)."""
        self.plans: dict[Any, Plan] = {}
        self.mru: list[Plan] = [_EMPTY]
        self.generation = [0]
        """Counts the plans made: a pinned launch (:meth:`pinned`) re-pins after each."""
        self._lock = threading.Lock()
        checks = kernel.spec.call_checks
        self._tensor_positions = [i for i, c in enumerate(checks) if not c.is_scalar]
        self._scalar_positions = [i for i, c in enumerate(checks) if c.is_scalar]
        self._per_call = _per_call_order(kernel, [checks[i].name for i in self._scalar_positions])
        # A constexpr scalar is compiled in: its value, not its class, picks the plan.
        self._by_value = constexpr_scalars(kernel)
        self._positional = run_time_scalars(kernel)
        self._loaded: dict[Any, compiled.Loaded] = {}
        namespace = self._generate(self._missed, traced=True)
        self.source: str = namespace["source"]
        """The generated hot function's source (for reading and debugging)."""
        self.call: Callable[..., Any] = namespace["call"]
        self.method: Callable[..., Any] = namespace["method"]
        """:attr:`call` with a first parameter it ignores: a kernel class's ``__call__``."""
        self.key: Callable[[tuple[Any, ...], dict[str, Any]], Any] = namespace["key"]

    def hot(self, miss: Miss) -> Callable[..., Any]:
        """Another hot function over the same plans, for callers that validate misses
        themselves: ``miss(args, kwargs)`` gets its misses, and it never asks whether
        the framework traces (a custom operator's implementation runs the launch the
        trace recorded).  Generated per call of this method: keep it."""
        function: Callable[..., Any] = self._generate(miss, traced=False)["call"]
        return function

    def pinned(
        self, miss: Miss, views: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None
    ) -> Callable[..., Any]:
        """A launch for one caller whose calls all pass, by position and without keywords,
        tensors of one layout (shapes, strides, dtypes, devices) and the same scalars: a
        library op's recorded plan, whose own key fixes them.  It launches the plan it
        pinned after checking only alignment, overlaps, tensors the framework sends to
        the miss path and that no plan was made since; else it takes the hot path
        (:meth:`hot`, misses to ``miss``) and pins that call's plan.  Untraced calls
        only.  Generated per call of this method: one per caller.

        With ``views``, the caller passes stand-ins: tensors of the same memory as the
        kernel's arguments in other shapes (a contiguous tensor for its flat view).  The
        pinned launch reads only what the two share (addresses, what the framework's
        miss test reads); the hot path gets ``views(stand_ins)``, the arguments."""
        hot = self.hot(miss)
        pinned: list[Any] = [_EMPTY, -1]
        checks = self.kernel.spec.call_checks

        def repin(arguments: tuple[Any, ...]) -> Any:
            if views is not None:
                arguments = views(arguments)
            result = hot(*arguments)
            plan = self.mru[0]
            # The hot path leaves its plan in ``mru``, unless a miss could not key the
            # call: pin only a plan whose guard and scalar classes fit this call.
            tensors = [arguments[i] for i in self._tensor_positions]
            classes = self._classes([arguments[i] for i in self._scalar_positions])
            fits = plan[0] is not _never and plan[2] == {} and plan[5] == classes
            pinned[:] = [plan, self.generation[0]] if fits and plan[0](*tensors) else [_EMPTY, -1]
            return result

        native = lean.make_pinned(
            pinned, self.generation, repin, self.reads, len(checks), self._tensor_positions,
            self._scalar_positions, self.kernel.aliasing.pairs,
        )  # fmt: skip
        if native is not None:
            launch_in_c: Callable[..., Any] = native
            return launch_in_c
        source = pinned_source(
            len(checks), self._tensor_positions, self._scalar_positions, self.reads,
            multi_device=self.reads.current_device is not None, pairs=self.kernel.aliasing.pairs,
        )  # fmt: skip
        namespace: dict[str, Any] = {
            "pinned": pinned, "generation": self.generation, "repin": repin,
            "stream": self.reads.raw_stream, "current_device": self.reads.current_device,
            "miss_mode": self.reads.miss_when[0] if self.reads.miss_when else None,
        }  # fmt: skip
        name = f"<ninetoothed pinned launch of {self.kernel.spec.name}>"
        exec(compile(source, name, "exec"), namespace)  # noqa: S102
        launch: Callable[..., Any] = namespace["launch"]
        return launch

    def _generate(self, miss: Miss, *, traced: bool) -> dict[str, Any]:
        """The namespace of the generated ``call`` and ``key`` (with their ``source``)."""
        reads = self.reads
        source = hot_source(
            len(self.kernel.spec.call_checks), self._tensor_positions, self._scalar_positions,
            reads, multi_device=reads.current_device is not None, by_value=self._by_value,
            traced=traced, pairs=self.kernel.aliasing.pairs,
        )  # fmt: skip
        namespace: dict[str, Any] = {
            "plans": self.plans,
            "mru": self.mru,
            "miss": miss,
            "stream": reads.raw_stream,
            "current_device": reads.current_device,
            "switched": self._switched,
            "scalar_class": compiled.int_class,
            "scalar_value": scalar_value,
            "traced": reads.traced,
            "miss_mode": reads.miss_when[0] if reads.miss_when else None,
        }
        name = f"<ninetoothed fast path of {self.kernel.spec.name}>"
        exec(compile(source, name, "exec"), namespace)  # noqa: S102
        namespace["source"] = source
        return namespace

    def _missed(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.miss(args, kwargs)

    # -- the miss path -----------------------------------------------------------
    def launch_bound(self, bound: BoundCall, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Launch a validated call and remember its plan for the hot path."""
        kernel = self.kernel
        reads = self.reads
        device = reads.device_of(bound.tensor_arguments[0]) if bound.tensor_arguments else 0
        pointers = [info.data_ptr for info in bound.tensors]
        prepared = kernel.prepare(bound.tensors, pointers, bound.scalars)
        scalars = [args[i] for i in self._scalar_positions]
        with reads.device_guard(device):
            configuration = self._configuration(
                MissedCall(bound, prepared, device, pointers, scalars)
            )
            launch = self._launch_of(bound, prepared, device, configuration)
        pointers = self._call_pointers(bound, args, pointers)
        plan = self._plan(bound, args, pointers, kwargs, launch, device, scalars)
        try:
            key = self.key(args, kwargs)
        except Exception:  # noqa: BLE001 - arguments the hot path cannot key: launch only
            key = None
        if key is not None:
            if len(self.plans) >= PLAN_LIMIT:
                self.plans.clear()  # in place: the generated hot functions hold this dict
            self.plans[key] = plan
            self.mru[0] = plan
        self.generation[0] += 1
        per_call = [*pointers, *scalars]
        if reads.current_device is not None and device != reads.current_device():
            with reads.device_guard(device):
                launch(reads.raw_stream(device), *per_call)
            return
        launch(reads.raw_stream(device), *per_call)

    def _configuration(self, call: MissedCall) -> tuning.Configuration:
        """Pinned at call time, the only one, or the tuner's choice for this call."""
        kernel = self.kernel
        if call.prepared.meta is not None:
            num_warps, num_stages = kernel.launch_options
            return tuning.Configuration(dict(call.prepared.meta), num_warps, num_stages)
        key = tuning_key(call.bound, self._positional)
        name = self.reads.device_name(call.device)
        return kernel.tuner.choose(
            key,
            name,
            lambda: self._tuning_call(call),
            self.reads.group,
            lambda: fit_of(kernel, call.bound, call.prepared),
        )

    def _launch_of(
        self, bound: BoundCall, prepared: Any, device: int, configuration: tuning.Configuration
    ) -> Callable[..., Any]:
        meta = configuration.kwargs()
        grid = prepared.grid(meta) if callable(prepared.grid) else prepared.grid
        values = list(prepared.arguments) + [meta[p.name] for p in self.kernel.signature.meta]
        return self._bind(
            bound, values, grid, device, configuration.num_warps, configuration.num_stages,
            self.reads.capturing, configuration.maxnreg,
        )  # fmt: skip

    def _tuning_call(self, call: MissedCall) -> TuningCall:
        """What the tuner needs for this call (:func:`.tuning_calls.tuning_call`)."""

        def launch_of(configuration: tuning.Configuration) -> Callable[..., Any]:
            return self._launch_of(call.bound, call.prepared, call.device, configuration)

        pointer_types = self._pointer_types(call.bound)
        return tuning_call(
            self.kernel, self.reads, call, self._positional, pointer_types, launch_of
        )

    def _pointer_types(self, bound: BoundCall) -> dict[int, tuple[str, bool]]:
        pointer_types = {}
        for index, parameter in enumerate(self.kernel.signature):
            if parameter.kind is ParameterKind.POINTER:
                info = bound.tensors[parameter.tensor_index or 0]
                pointer_types[index] = (compiled.triton_type(info.dtype), info.data_ptr % 16 == 0)
        return pointer_types

    def _plan(
        self,
        bound: BoundCall,
        args: tuple[Any, ...],
        pointers: list[int],
        kwargs: dict[str, Any],
        launch: Callable[..., Any],
        device: int,
        scalars: list[Any],
    ) -> Plan:
        """The plan of a validated call, as the hot path checks it against later calls
        (``pointers``: :meth:`_call_pointers`)."""
        tensors = bound.tensor_arguments
        if bound.unused:  # the hot path reads the arguments, not the stand-ins
            given = [args[i] for i in self._tensor_positions]
            tensors = [given[i] if i in bound.unused else t for i, t in enumerate(tensors)]
        guard: Callable[..., bool] = _never
        if self.reads.guard is not None:
            made = self.reads.guard(tensors)
            if made is not None:
                guard = made
        aligned = 0 if not any(p & 15 for p in pointers) else -1
        bounds = self.kernel.aliasing.bounds(bound.tensors, bound.unused)
        return (guard, aligned, dict(kwargs), launch, device, self._classes(scalars), bounds)

    def _classes(self, scalars: Sequence[Any]) -> tuple[Any, ...]:
        """The plan's scalar classes of a call's scalars (in ``_scalar_positions`` order): a
        constexpr one by value, a run-time one by its Triton class."""
        return tuple(
            scalar_value(s) if i in self._by_value else compiled.int_class(s)
            for i, s in zip(self._scalar_positions, scalars)
        )

    def _call_pointers(
        self, bound: BoundCall, args: tuple[Any, ...], pointers: list[int]
    ) -> list[int]:
        """The pointers a launch passes, as the hot path reads them from the arguments.

        A parameter the call leaves unused (``bound.unused``) was prepared with a
        stand-in; the launch passes the argument's own pointer, as the hot path does
        on the next call: the kernel never reads it (the call's constexprs, part of
        the plan's key, compiled that code out), so a miss and a hit launch alike.
        """
        if not bound.unused:
            return pointers
        pointer_of = reader(self.reads.pointer_read)
        return [
            pointer_of(args[self._tensor_positions[i]]) if i in bound.unused else pointer
            for i, pointer in enumerate(pointers)
        ]

    def _bind(
        self,
        bound: BoundCall,
        values: list[Any],
        grid: Sequence[int],
        device: int,
        num_warps: int,
        num_stages: int,
        capturing: Callable[[], bool],
        maxnreg: int | None = None,
    ) -> Callable[..., Any]:
        """The launch function of this call's specialisation (compiled and loaded once)."""
        padded = [int(g) for g in grid] + [1, 1, 1]
        grid3 = (padded[0], padded[1], padded[2])
        if grid3[0] * grid3[1] * grid3[2] == 0:
            return _no_launch
        kernel = self.kernel
        parameters = [(p.name, p.constexpr) for p in kernel.signature]
        pointer_types = self._pointer_types(bound)
        specialisation = compiled.specialise(parameters, values, pointer_types)
        entry_key = (specialisation, num_warps, num_stages, maxnreg, device)
        loaded = self._loaded.get(entry_key)
        if loaded is None:
            if capturing():
                raise LaunchError(
                    f"{kernel.spec.label}: a call with new arguments (shapes, dtypes or "
                    "alignment) inside a CUDA graph capture would compile the kernel; call it "
                    "once with the same arguments before capturing"
                )
            with self._lock:
                loaded = self._loaded.get(entry_key)
                if loaded is None:
                    loaded = self._load(specialisation, num_warps, num_stages, maxnreg)
                    self._loaded[entry_key] = loaded
        others = [values[i] for i in self._per_call.others]
        return loaded.bind(grid3, others)

    def _load(
        self,
        specialisation: compiled.Specialisation,
        warps: int,
        stages: int,
        maxnreg: int | None = None,
    ) -> Any:
        import triton

        early.driver_settled()
        target = triton.runtime.driver.active.get_current_target()
        spec = self.kernel.spec
        with failures.compile_errors_named(spec.label, spec.application):
            binary = compiled.compile_kernel(
                self.kernel.function, specialisation, target, warps, stages, maxnreg
            )
        return compiled.Loaded(binary, self._per_call.order)

    def _switched(self, plan: Plan, *per_call: Any) -> None:
        """Launch with the plan's device made current (it was not)."""
        device = plan[4]
        with self.reads.device_guard(device):
            plan[3](self.reads.raw_stream(device), *per_call)


def _no_launch(stream: int, *per_call: Any) -> None:
    """An empty grid launches nothing."""


@dataclass(frozen=True)
class _PerCall:
    order: tuple[str, ...]
    """Per signature parameter: ``"p<i>"`` passed per call, ``"a<j>"`` bound."""
    others: tuple[int, ...]
    """Signature indices of the bound parameters, in order."""


def _per_call_order(kernel: LaunchTarget, scalar_names: list[str]) -> _PerCall:
    """Which signature parameters a launch takes per call: pointers, then scalars."""
    order: list[str] = []
    others: list[int] = []
    scalar_index = {name: i for i, name in enumerate(scalar_names)}
    pointer_count = len(kernel.signature.pointers)
    for index, parameter in enumerate(kernel.signature):
        if parameter.kind is ParameterKind.POINTER:
            order.append(f"p{parameter.tensor_index}")
        elif parameter.kind is ParameterKind.SCALAR and parameter.name in scalar_index:
            order.append(f"p{pointer_count + scalar_index[parameter.name]}")
        else:
            order.append(f"a{len(others)}")
            others.append(index)
    return _PerCall(tuple(order), tuple(others))
