"""The per-call fast path: a generated function per kernel and framework.

A call's hot path reads the arguments, finds the call's *plan* and launches
it through the compiled kernel's raw launcher (:mod:`nt_triton.launch.compiled`),
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
(like the host function), specialised to its parameter count: no loops, no
keyword dict unless keywords are given, locals for everything.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ninetoothed.binding import BoundCall
from ninetoothed.errors import LaunchError
from nt_triton import failures, tuning
from nt_triton.abi import ParameterKind
from nt_triton.launch import compiled
from nt_triton.tuner.core import TuningCall

if TYPE_CHECKING:
    from nt_triton.kernel import TritonKernel

Plan = tuple[Any, ...]
"""``(guard, alignment, keywords, launch, device, scalar classes, overlap bounds)``: the
bounds are :meth:`ninetoothed.aliasing.Aliasing.bounds`, the distances between
pointers at which arguments would share memory a written one has."""


@dataclass(frozen=True)
class HostReads:
    """What a framework's fast path reads and asks, given by its adapter.

    The ``*_read`` strings are attribute reads on one tensor, ``{}`` standing
    for it (``"{}.data_ptr()"``); nt-triton composes them into the generated
    function.
    """

    pointer_read: str
    """The tensor's device address (an int)."""

    key_reads: tuple[str, ...]
    """Hashable facts that, with alignment, fix the plan: shape, strides, dtype, device."""

    device_of: Callable[[Any], int]
    """The CUDA device index of a tensor (on a miss)."""

    raw_stream: Callable[[int], int]
    """The framework's current stream on a device, as a raw handle (the capture stream
    while a CUDA graph is captured)."""

    current_device: Callable[[], int] | None
    """The current CUDA device; None where the process sees one GPU (nothing to check)."""

    device_guard: Callable[[int], contextlib.AbstractContextManager[Any]]
    """A context making a device current (to load a module on it, or launch on it)."""

    guard: Callable[[Sequence[Any]], Callable[..., bool]] | None = None
    """Builds, for a call's tensors, a check that other tensors match them (dtype,
    device, shape, strides); None: the dict lookup alone."""

    capturing: Callable[[], bool] = lambda: False
    """Whether the current stream is capturing a CUDA graph (then a miss may not
    compile or tune)."""

    device_name: Callable[[int], str] = lambda index: f"cuda:{index}"
    """The device's name (tuning results are kept per device name)."""

    traced: Callable[[], bool] | None = None
    """True while the framework traces or transforms calls (``torch.compile``,
    ``torch.func``): such calls take the miss path, where the adapter routes
    them (a custom operator); None: never."""

    miss_when: tuple[Callable[[], bool], str] | None = None
    """``(mode, read)``: while ``mode()`` is true, a call where ``read`` (on one tensor,
    ``{}`` standing for it) is true of any tensor goes to the miss path whatever its
    plan (PyTorch: grad mode on and a tensor that requires grad, which the adapter
    refuses; under ``no_grad`` the same tensors launch from their plan)."""

    timer: Callable[[Callable[[], None], int], list[float]] | None = None
    """``timer(run, count)``: milliseconds of each of ``count`` runs on the device
    (tuning measures with it)."""

    snapshot: Callable[[Any], Callable[[], None]] | None = None
    """Copies a tensor; returns the function that copies it back (tuning restores
    what its runs overwrite)."""


def _never(*tensors: Any) -> bool:
    return False


_EMPTY: Plan = (_never, -1, None, None, -1, None, ())


class FastLauncher:
    """One kernel's fast path for one framework: :attr:`call` is the hot function."""

    def __init__(
        self,
        kernel: TritonKernel,
        reads: HostReads,
        miss: Callable[[tuple[Any, ...], dict[str, Any]], Any],
    ) -> None:
        self.kernel = kernel
        self.reads = reads
        self.miss = miss
        """Where calls without a plan go: ``miss(args, kwargs)`` (full validation)."""
        self.plans: dict[Any, Plan] = {}
        self.mru: list[Plan] = [_EMPTY]
        self._lock = threading.Lock()
        checks = kernel.spec.call_checks
        self._tensor_positions = [i for i, c in enumerate(checks) if not c.is_scalar]
        self._scalar_positions = [i for i, c in enumerate(checks) if c.is_scalar]
        self._per_call = _per_call_order(kernel, [checks[i].name for i in self._scalar_positions])
        by_name = kernel.signature.by_name
        # A constexpr scalar is compiled in: its value, not its class, picks the plan.
        self._by_value = frozenset(
            i for i in self._scalar_positions
            if checks[i].name in by_name and by_name[checks[i].name].constexpr
        )  # fmt: skip
        # Run-time positional scalars stay out of the tuning key; constexpr ones are
        # in it: each value is another compiled kernel with its own best configuration
        # (attention with and without its causal mask: 64 x 64 blocks against 128 x 128).
        self._positional = frozenset(
            checks[i].name for i in self._scalar_positions if i not in self._by_value
        )
        self._loaded: dict[Any, compiled.Loaded] = {}
        namespace = self._generate(self._missed, traced=True)
        self.source: str = namespace["source"]
        """The generated hot function's source (for reading and debugging)."""
        self.call: Callable[..., Any] = namespace["call"]
        self.key: Callable[[tuple[Any, ...], dict[str, Any]], Any] = namespace["key"]

    def hot(self, miss: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> Callable[..., Any]:
        """Another hot function over the same plans, for callers that validate misses
        themselves: ``miss(args, kwargs)`` gets its misses, and it never asks whether
        the framework traces (a custom operator's implementation runs the launch the
        trace recorded).  Generated per call of this method: keep it."""
        function: Callable[..., Any] = self._generate(miss, traced=False)["call"]
        return function

    def _generate(
        self, miss: Callable[[tuple[Any, ...], dict[str, Any]], Any], *, traced: bool
    ) -> dict[str, Any]:
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
            "scalar_value": _scalar_value,
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
            configuration = self._configuration(_Call(bound, prepared, device, pointers, scalars))
            launch = self._launch_of(bound, prepared, device, configuration)
        pointers = self._call_pointers(bound, args, pointers)
        plan = self._plan(bound, args, pointers, kwargs, launch, device, scalars)
        try:
            key = self.key(args, kwargs)
        except Exception:  # noqa: BLE001 - arguments the hot path cannot key: launch only
            key = None
        if key is not None:
            self.plans[key] = plan
            self.mru[0] = plan
        per_call = [*pointers, *scalars]
        if reads.current_device is not None and device != reads.current_device():
            with reads.device_guard(device):
                launch(reads.raw_stream(device), *per_call)
            return
        launch(reads.raw_stream(device), *per_call)

    def _configuration(self, call: _Call) -> tuning.Configuration:
        """Pinned at call time, the only one, or the tuner's choice for this call."""
        kernel = self.kernel
        if call.prepared.meta is not None:
            num_warps, num_stages = kernel.launch_options
            return tuning.Configuration(dict(call.prepared.meta), num_warps, num_stages)
        key = tuning_key(call.bound, self._positional)
        name = self.reads.device_name(call.device)
        return kernel.tuner.choose(key, name, lambda: self._tuning_call(call))

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

    def _tuning_call(self, call: _Call) -> TuningCall:
        """What the tuner needs to compile, run and time this call's configurations."""
        import triton

        bound, prepared, device, pointers, scalars = call
        kernel = self.kernel
        reads = self.reads
        target = triton.runtime.driver.active.get_current_target()
        parameters = [(p.name, p.constexpr) for p in kernel.signature]
        pointer_types = self._pointer_types(bound)

        def job(configuration: tuning.Configuration) -> dict[str, Any]:
            meta = configuration.kwargs()
            values = list(prepared.arguments) + [meta[p.name] for p in kernel.signature.meta]
            special = compiled.specialise(parameters, values, pointer_types)
            return {
                "path": kernel.source_path,
                "name": kernel.function.__name__,
                "signature": special.signature,
                "constexprs": special.constexprs,
                "attrs": special.attrs,
                "target": [target.backend, target.arch, target.warp_size],
                "num_warps": configuration.num_warps,
                "num_stages": configuration.num_stages,
                "maxnreg": configuration.maxnreg,
            }

        def launch(configuration: tuning.Configuration) -> Callable[[], None]:
            run = self._launch_of(bound, prepared, device, configuration)
            stream = reads.raw_stream(device)
            return lambda: run(stream, *pointers, *scalars)

        if reads.timer is None:
            raise LaunchError(f"{kernel.spec.name}: this framework's adapter cannot time runs")
        host = kernel.signature.host
        values = {
            p.name: v for p, v in zip(host, prepared.arguments) if p.constexpr and type(v) is int
        }
        return TuningCall(
            key=tuning_key(bound, self._positional),
            values=values,
            element_bytes=max((itemsize(t.dtype) for t in bound.tensors), default=2),
            job=job,
            launch=launch,
            timer=reads.timer,
            restores=self._restores(bound),
            capturing=reads.capturing,
            in_process=bool(kernel.injected),
        )

    def _restores(self, bound: BoundCall) -> list[Callable[[], None]]:
        """Snapshots of what tuning runs would overwrite: written parameters that are also
        read, or whose memory another argument overlaps."""
        snapshot = self.reads.snapshot
        if snapshot is None:
            return []
        names = [p.name for p in self.kernel.spec.tensor_parameters]
        written = set(self.kernel.outputs)
        read = set(self.kernel.inputs)
        spans = [_span(info) for info in bound.tensors]
        restores = []
        for index, name in enumerate(names):
            if name not in written:
                continue
            start, end = spans[index]
            overlapped = any(
                other != index and spans[other][0] < end and start < spans[other][1]
                for other in range(len(names))
            )
            if name in read or overlapped:
                restores.append(snapshot(bound.tensor_arguments[index]))
        return restores

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
        classes = tuple(
            _scalar_value(s) if i in self._by_value else compiled.int_class(s)
            for i, s in zip(self._scalar_positions, scalars)
        )
        bounds = self.kernel.aliasing.bounds(bound.tensors, bound.unused)
        return (guard, aligned, dict(kwargs), launch, device, classes, bounds)

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
        pointer_of = _reader(self.reads.pointer_read)
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
                    f"{kernel.spec.name}: a call with new arguments (shapes, dtypes or "
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

        target = triton.runtime.driver.active.get_current_target()
        spec = self.kernel.spec
        with failures.compile_errors_named(spec.name, spec.application):
            binary = compiled.compile_kernel(
                self.kernel.function, specialisation, target, warps, stages, maxnreg
            )
        return compiled.Loaded(binary, self._per_call.order)

    def _switched(self, plan: Plan, *per_call: Any) -> None:
        """Launch with the plan's device made current (it was not)."""
        device = plan[4]
        with self.reads.device_guard(device):
            plan[3](self.reads.raw_stream(device), *per_call)


class _Call(NamedTuple):
    """One validated call on its way through the miss path."""

    bound: BoundCall
    prepared: Any
    device: int
    pointers: list[int]
    scalars: list[Any]


def _scalar_value(value: Any) -> tuple[type, Any]:
    """A constexpr scalar's key: its type with its value (``True`` must not hit ``1``)."""
    return (type(value), value)


def _reader(read: str) -> Callable[[Any], Any]:
    """A function applying one of :class:`HostReads`'s reads (``{}`` the tensor)."""
    namespace: dict[str, Any] = {}
    exec(compile(f"def read(t):\n    return {read.format('t')}\n", "<read>", "exec"), namespace)  # noqa: S102
    function: Callable[[Any], Any] = namespace["read"]
    return function


def _no_launch(stream: int, *per_call: Any) -> None:
    """An empty grid launches nothing."""


def tuning_key(bound: BoundCall, positional: frozenset[str] = frozenset()) -> tuple[Any, ...]:
    """What the best configuration depends on: sizes, dtypes, unit strides, keyword
    symbols and constexpr scalars.

    The scalars named in ``positional`` (the run-time ``Tensor(0)`` parameters)
    are left out: a seed or a factor that changes every call must not re-tune
    every call.
    """
    tensors = bound.tensors
    return (
        tuple(t.shape for t in tensors),
        tuple(t.dtype for t in tensors),
        tuple(tuple(s == 1 for s in t.strides) for t in tensors),
        tuple(sorted((k, v) for k, v in bound.scalars.items() if k not in positional)),
    )


def itemsize(dtype: str) -> int:
    """Bytes per element of a canonical dtype name (``"float16"`` -> 2)."""
    digits = re.findall(r"\d+", dtype)
    return max(1, int(digits[0]) // 8) if digits else 1


def _span(info: Any) -> tuple[int, int]:
    """The bytes a tensor's elements cover: ``[start, end)``."""
    if any(size == 0 for size in info.shape):
        return (info.data_ptr, info.data_ptr)
    extent = sum((size - 1) * abs(stride) for size, stride in zip(info.shape, info.strides))
    return (info.data_ptr, info.data_ptr + (extent + 1) * itemsize(info.dtype))


@dataclass(frozen=True)
class _PerCall:
    order: tuple[str, ...]
    """Per signature parameter: ``"p<i>"`` passed per call, ``"a<j>"`` bound."""
    others: tuple[int, ...]
    """Signature indices of the bound parameters, in order."""


def _per_call_order(kernel: TritonKernel, scalar_names: list[str]) -> _PerCall:
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


def hot_source(
    count: int,
    tensors: Sequence[int],
    scalars: Sequence[int],
    reads: HostReads,
    *,
    multi_device: bool,
    by_value: frozenset[int] = frozenset(),
    traced: bool = True,
    pairs: Sequence[tuple[int, int]] = (),
) -> str:
    """The hot function ``call(*args, **kwargs)`` and ``key(args, kwargs)``, as source.

    One function per kernel and framework: the arguments unpacked by
    position, each tensor's pointer and key facts read once, the most recent
    plan checked, else the dict; any exception goes to ``miss``.  Scalars
    are keyed by Triton's class (``int_class``), those in ``by_value``
    (constexprs) by value.  ``traced``: calls made while the framework traces
    (``reads.traced``) go to ``miss``; False leaves that check out.  ``pairs``:
    the tensors ``(w, o)`` (indices among the tensors) whose pointers' distance
    the plan's bounds check; a call where they overlap goes to ``miss``, whose
    validation refuses it.
    """
    names = [f"t{i}" if i in tensors else f"s{i}" for i in range(count)]
    unpack = ", ".join(names) + ("," if count == 1 else "")
    pointers = [f"p{i}" for i in range(len(tensors))]
    reads_lines = [
        f"{p} = {reads.pointer_read.format(names[t])}" for p, t in zip(pointers, tensors)
    ]
    ored = " | ".join(pointers) or "0"
    each = ", ".join(f"{p} & 15" for p in pointers) + ("," if len(pointers) == 1 else "")
    facts = [read.format(names[t]) for t in tensors for read in reads.key_reads]
    classes = ", ".join(
        f"scalar_{'value' if s in by_value else 'class'}({names[s]})" for s in scalars
    )
    classes_tuple = f"({classes},)" if scalars else "()"
    key_items = [*facts, f"({ored}) & 15 and ({each})", "tuple(kwargs.items()) if kwargs else None"]
    if scalars:
        key_items.append("classes")
    key_text = ", ".join(key_items)
    tensor_args = ", ".join(names[t] for t in tensors)
    per_call = ", ".join(pointers + [names[s] for s in scalars])
    guard_check = f"not plan[0]({tensor_args})" if tensors else "False"
    scalar_check = " or classes != plan[5]" if scalars else ""
    body = ["def call(*args, **kwargs):"]
    if traced and reads.traced is not None:
        body += ["    if traced():", "        return miss(args, kwargs)"]
    body += [
        "    try:",
        f"        {unpack} = args" if count else "        () = args",
        *(f"        {line}" for line in reads_lines),
    ]
    if scalars:
        body.append(f"        classes = {classes_tuple}")
    body += [
        "        plan = mru[0]",
        f"        if ({ored}) & 15 != plan[1] or kwargs != plan[2]{scalar_check} or {guard_check}:",
        f"            plan = plans[({key_text},)]",
        "            mru[0] = plan",
        "    except Exception:",
        "        return miss(args, kwargs)",
    ]
    if pairs:
        overlaps = " or ".join(
            f"bounds[{3 * k}] < (gap := p{w} - p{o}) < bounds[{3 * k + 1}] "
            f"and gap != bounds[{3 * k + 2}]"
            for k, (w, o) in enumerate(pairs)
        )
        body += ["    bounds = plan[6]", f"    if {overlaps}:", "        return miss(args, kwargs)"]
    if reads.miss_when is not None and tensors:
        read = reads.miss_when[1]
        tested = " or ".join(read.format(names[t]) for t in tensors)
        body += [f"    if miss_mode() and ({tested}):", "        return miss(args, kwargs)"]
    if multi_device:
        body += [
            "    device = plan[4]",
            "    if device != current_device():",
            f"        return switched(plan, {per_call})",
            f"    return plan[3](stream(device), {per_call})",
        ]
    else:
        body.append(f"    return plan[3](stream(plan[4]), {per_call})")
    key = [
        "def key(args, kwargs):",
        f"    {unpack} = args" if count else "    () = args",
        *(f"    {line}" for line in reads_lines),
    ]
    if scalars:
        key.append(f"    classes = {classes_tuple}")
    key.append(f"    return ({key_text},)")
    return "\n".join(body) + "\n\n\n" + "\n".join(key) + "\n"
