"""Calling a C library again from Python at the cost of reading the arguments.

A full call (:class:`~ninetoothed._aot.kernel.AotKernel`) checks everything
the just-in-time path checks, then builds the C arguments.  What those
checks depend on is the tensors' shapes, strides, dtypes and devices, the
scalars' Python types (and values, for scalars fixed at make time) and the
key values: :class:`FastCalls` remembers each validated call's
:class:`Launch` under those facts, so a later call with the same facts only
writes the new data pointers and scalar values into the remembered
arguments and calls the library.  Anything else (another framework's
tensors, keywords, a new shape) misses and takes the full path.

The hot function is Python source generated once per library from its
parameter kinds and the framework's reads (the adapter's
:class:`~ninetoothed.runtime.hookspecs.HostReads`, which the just-in-time
fast path reads too): the most recent call's facts are confirmed by the
framework's guard (PyTorch: one C++ call comparing every tensor's dtype,
device, sizes and strides) before any key is built, the data pointers are
written into one array of ``NineToothedTensor`` and the library's packed
entry (:data:`ninetoothed.aot.PACKED_PREFIX`) gets that array's address:
one integer through ``ctypes`` instead of structures by value.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ninetoothed.aot import NineToothedTensor
from ninetoothed.runtime.hookspecs import HostReads

__all__ = ["Entry", "FastCalls", "Launch", "Runtime"]

_NO_CONTEXT = 6
"""``NINETOOTHED_ERROR_NO_CONTEXT``."""
_LIMIT = 256
"""Remembered calls per kernel (forgotten all at once beyond it)."""
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Entry:
    """A library's launch function: by value, its packed twin (None in a library built
    without one), and ``ninetoothed_use_device``."""

    function: Any
    packed: Any
    use_device: Any


@dataclass(frozen=True)
class Runtime:
    """What a call asks the framework's runtime: streams and the current device."""

    stream: Callable[[int], int]
    """The current stream of a device, a raw handle."""
    current: Callable[[], int] | None
    """The current device; None where nothing needs checking (one GPU)."""
    guard: Callable[[int], AbstractContextManager[Any] | None]
    """A context making a device current (None: it is already)."""

    @staticmethod
    def of(adapter: Any, reads: HostReads | None) -> Runtime:
        """The adapter's fast reads, else its ``current_stream`` and ``device_guard``
        asked on every call."""
        if reads is not None:
            return Runtime(reads.raw_stream, reads.current_device, reads.device_guard)
        current = getattr(adapter, "current_stream", None) or getattr(
            adapter, "launch_stream", None
        )
        guard = getattr(adapter, "device_guard", lambda _: None)
        return Runtime(
            (lambda index: int(current(f"cuda:{index}"))) if current else (lambda _: 0),
            lambda: -1,  # never known: every call asks the adapter's guard
            lambda index: guard(f"cuda:{index}"),
        )


def device_index(device: str) -> int:
    """``3`` for ``"cuda:3"`` (0 for ``"cuda"``)."""
    return int(device.partition(":")[2] or 0)


class Launch:
    """One validated call's C arguments, callable again with new pointers and values."""

    def __init__(
        self, entry: Entry, arguments: Sequence[Any], device: str, runtime: Runtime
    ) -> None:
        self.keep = list(arguments)
        """The arguments (and through them the shapes, strides and scalar buffers)."""
        self.device = device_index(device)
        self.runtime = runtime
        self.entry = entry
        self.array = (NineToothedTensor * max(1, len(arguments)))()
        for index, argument in enumerate(arguments):
            if isinstance(argument, ctypes.c_int):  # a key value, in data
                self.array[index].data = argument.value & _MASK
            else:
                self.array[index] = argument
        self.slots = [self.array[i] for i in range(len(arguments))]
        """Views of the array's elements: writing ``data`` writes the array."""
        self.values = [getattr(argument, "_value", None) for argument in arguments]
        """Each scalar's value buffer (None for other parameters)."""
        if entry.packed is not None:
            self.call: Callable[[int, Any], int] = entry.packed
            self.target: Any = ctypes.addressof(self.array)
        else:  # by value: the array's views (written pointers reach them), keys as given
            function = entry.function
            self.call = lambda stream, given: function(ctypes.c_void_p(stream), *given)
            self.target = [
                a if isinstance(a, ctypes.c_int) else self.slots[i] for i, a in enumerate(arguments)
            ]
        self.guard: Callable[..., bool] = _never
        """Whether other tensors match this call's (set by :class:`FastCalls`)."""
        self.facts: tuple[Any, ...] = ()
        """The scalars' types, constants and key values the hot path compares."""
        self.lock = threading.Lock()
        """Held while the hot path writes the array and calls the library."""

    def __call__(self) -> int:
        """Call the library (on the framework's current stream, the device made current)."""
        current = self.runtime.current
        if current is not None and current() != self.device:
            return self.switched()
        return self.launch()

    def launch(self) -> int:
        """Call the library on the current device."""
        status = int(self.call(self.runtime.stream(self.device), self.target))
        if status == _NO_CONTEXT:  # a thread new to the GPU: its device's primary context
            status = int(self.entry.use_device(self.device)) or int(
                self.call(self.runtime.stream(self.device), self.target)
            )
        return status

    def switched(self) -> int:
        """Call the library with the call's device made current."""
        guard = self.runtime.guard(self.device)
        if guard is None:
            return self.launch()
        with guard:
            return self.launch()


def _never(*_: Any) -> bool:
    return False


class FastCalls:
    """A kernel's remembered calls (see the module docstring)."""

    def __init__(self, kinds: Sequence[str], adapter: Any, reads: HostReads | None) -> None:
        self.kinds = list(kinds)
        self.plans: dict[Any, Launch] = {}
        self.mru: list[Launch | None] = [None]
        self.guard_factory = reads.guard if reads is not None else None
        namespace: dict[str, Any] = {"plans": self.plans, "mru": self.mru}
        if reads is not None:
            pointer, keys = reads.pointer_read, reads.key_reads
        else:  # what describe says, which every adapter has
            namespace["_key_of"], namespace["_pointer_of"] = _adapter_reads(adapter)
            pointer, keys = "_pointer_of({})", ("_key_of({})",)
        self.source = hot_source(self.kinds, pointer, keys)
        exec(compile(self.source, "<ninetoothed C library fast path>", "exec"), namespace)  # noqa: S102
        self.call: Callable[[tuple[Any, ...]], int | None] = namespace["call"]
        """The library's status for a remembered call, or None (a miss: nothing ran)."""
        self.key: Callable[[tuple[Any, ...]], Any] = namespace["key"]
        """The facts a call's validation depends on (raises for a call the path refuses)."""

    def remember(self, args: tuple[Any, ...], launch: Launch) -> None:
        """Keep ``launch`` for later calls with the facts of ``args``."""
        try:
            key = self.key(args)
            hash(key)
        except Exception:  # noqa: BLE001 - arguments the hot path cannot key: not kept
            return
        launch.facts = _facts(self.kinds, args)
        tensors = [args[i] for i, kind in enumerate(self.kinds) if kind == "tensor"]
        if self.guard_factory is not None and tensors:
            try:
                made = self.guard_factory(tensors)
                launch.guard = made if made is not None else _never
            except Exception:  # noqa: BLE001 - no guard for these: the key decides
                launch.guard = _never
        if len(self.plans) >= _LIMIT:
            self.plans.clear()
        self.plans[key] = launch
        self.mru[0] = launch


def _facts(kinds: Sequence[str], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What the hot path compares besides the tensors, in parameter order: a scalar's
    type, a constant's type and value, a key value."""
    facts: list[Any] = []
    for kind, argument in zip(kinds, args):
        if kind == "scalar":
            facts.append(type(argument))
        elif kind == "constant":
            facts += [type(argument), argument]
        elif kind == "key":
            facts.append(argument)
    return tuple(facts)


def _adapter_reads(adapter: Any) -> tuple[Callable[[Any], Any], Callable[[Any], int]]:
    reads = getattr(adapter, "aot_reads", None)
    if reads is not None:
        key_of, pointer_of = reads()
        return key_of, pointer_of
    return (lambda obj: tuple(adapter.describe(obj)[:4])), (
        lambda obj: adapter.describe(obj).data_ptr
    )


def hot_source(kinds: Sequence[str], pointer: str, keys: Sequence[str]) -> str:
    """The hot function ``call(args)`` and ``key(args)`` for parameters of ``kinds``
    (``pointer`` and ``keys``: reads of one tensor, ``{}`` standing for it).

    A plan's array is written and passed under its lock, taken without waiting: a
    thread that finds it held (another thread launching the same plan) takes the full
    path, with arguments of its own, instead of writing pointers the other launches.
    """
    names = [f"a{i}" for i in range(len(kinds))]
    unpack = f"{', '.join(names)}{',' if len(names) == 1 else ''} = args"
    confirm, key = _confirm_and_key(names, kinds, keys)
    tensors = [i for i, kind in enumerate(kinds) if kind == "tensor"]
    scalars = [i for i, kind in enumerate(kinds) if kind == "scalar"]
    lines = [
        "def key(args):",
        f"    {unpack}",
        f"    return {key}",
        "",
        "def call(args):",
        "    try:",
        f"        {unpack}",
        "        plan = mru[0]",
        "        facts = plan.facts if plan is not None else ()",
        f"        if plan is None or not ({confirm}):",
        f"            plan = plans[{key}]",
        "            mru[0] = plan",
        *[f"        p{i} = {pointer.format(names[i])}" for i in tensors],
        "    except Exception:",
        "        return None",
        "    lock = plan.lock",
        "    if not lock.acquire(False):",
        "        return None",
        "    try:",
        "        slots, values = plan.slots, plan.values",
        "        try:",
        *[f"            slots[{i}].data = p{i}" for i in tensors],
        *[f"            values[{i}].value = a{i}" for i in scalars],
        "        except Exception:",
        "            return None",
        # An int the C type cannot hold: the full path says so.
        *[
            f"        if type(a{i}) is int and values[{i}].value != a{i}: return None"
            for i in scalars
        ],
        "        runtime = plan.runtime",
        "        current = runtime.current",
        "        if current is not None and current() != plan.device:",
        "            return plan.switched()",
        "        status = plan.call(runtime.stream(plan.device), plan.target)",
        f"        return status if status != {_NO_CONTEXT} else plan.launch()",
        "    finally:",
        "        lock.release()",
        "",
    ]
    return "\n".join(lines)


def _confirm_and_key(
    names: Sequence[str], kinds: Sequence[str], keys: Sequence[str]
) -> tuple[str, str]:
    """The expressions confirming the latest plan (``plan`` and its ``facts``) and
    building a call's key."""
    checks, key_parts, position = [], [], 0
    for name, kind in zip(names, kinds):
        if kind == "tensor":
            key_parts += [read.format(name) for read in keys]
        elif kind == "scalar":
            checks.append(f"type({name}) is facts[{position}]")
            key_parts.append(f"type({name})")
            position += 1
        elif kind == "constant":
            checks.append(f"type({name}) is facts[{position}] and {name} == facts[{position + 1}]")
            key_parts += [f"type({name})", name]
            position += 2
        else:
            checks.append(f"{name} == facts[{position}]")
            key_parts.append(name)
            position += 1
    tensors = [n for n, kind in zip(names, kinds) if kind == "tensor"]
    guard = f"plan.guard({', '.join(tensors)})" if tensors else "True"
    key = f"({', '.join(key_parts)}{',' if len(key_parts) == 1 else ''})"
    return " and ".join([guard, *checks]), key
