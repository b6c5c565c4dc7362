"""Calling a C library again from Python at the cost of reading the arguments.

A full call (:class:`~ninetoothed._aot.kernel.AotKernel`) checks everything
the just-in-time path checks, then builds the C arguments.  What those
checks depend on is the tensors' shapes, strides, dtypes and devices, the
scalars' Python types (and values, for scalars fixed at make time) and the
key values: :class:`FastCalls` remembers each validated call's
:class:`Launch` under those facts, read by the framework adapter's cheapest
reads (``aot_reads``), so a later call with the same facts only writes the
new data pointers and scalar values into the remembered arguments and calls
the library.  Anything else (another framework's tensors, keywords, a new
shape) misses and takes the full path.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["FastCalls", "Launch"]

_NUMBERS = (int, float, bool)
_NO_CONTEXT = 6
"""``NINETOOTHED_ERROR_NO_CONTEXT``."""
_LIMIT = 256
"""Remembered calls per kernel (forgotten all at once beyond it)."""


class Launch:
    """One validated call's C arguments, callable again with new pointers and values."""

    def __init__(
        self, function: Any, arguments: Sequence[Any], adapter: Any, device: str, use_device: Any
    ) -> None:
        self.function = function
        self.use_device = use_device
        """The library's ``ninetoothed_use_device``: a thread that has not used the GPU
        through the framework yet has no current context."""
        self.arguments = list(arguments)
        self.device = device
        current = getattr(adapter, "current_stream", None) or getattr(
            adapter, "launch_stream", None
        )
        self.stream: Callable[[str], int] = current if current is not None else (lambda _: 0)
        self.guard: Callable[[str], Any] = getattr(adapter, "device_guard", lambda _: None)

    def __call__(self, _: tuple[Any, ...] = ()) -> int:
        """Call the library (on the framework's current stream, the device made current)."""
        stream = ctypes.c_void_p(int(self.stream(self.device)))
        guard = self.guard(self.device)
        if guard is None:
            status = int(self.function(stream, *self.arguments))
        else:
            with guard:
                status = int(self.function(stream, *self.arguments))
        if status == _NO_CONTEXT:  # a thread new to the GPU: its device's primary context
            index = int(self.device.partition(":")[2] or 0)
            status = int(self.use_device(index)) or int(self.function(stream, *self.arguments))
        return status


class FastCalls:
    """A kernel's remembered calls (see the module docstring)."""

    def __init__(self, kinds: Sequence[str], adapter: Any) -> None:
        reads = getattr(adapter, "aot_reads", None)
        if reads is not None:
            self.key_of, self.pointer_of = reads()
        else:  # what describe says, which every adapter has
            self.key_of = lambda obj: tuple(adapter.describe(obj)[:4])
            self.pointer_of = lambda obj: adapter.describe(obj).data_ptr
        self.count = len(kinds)
        self.tensors = [i for i, kind in enumerate(kinds) if kind == "tensor"]
        self.scalars = [i for i, kind in enumerate(kinds) if kind == "scalar"]
        self.constants = [i for i, kind in enumerate(kinds) if kind == "constant"]
        self.keys = [i for i, kind in enumerate(kinds) if kind == "key"]
        self.plans: dict[Hashable, Launch] = {}

    def key(self, args: tuple[Any, ...]) -> Hashable:
        """The facts a call's validation depends on (raises for a call the path refuses)."""
        if len(args) != self.count:
            raise KeyError(len(args))
        key_of = self.key_of
        parts: list[Any] = [key_of(args[i]) for i in self.tensors]
        for i in self.scalars:
            kind = type(args[i])
            if kind not in _NUMBERS:
                raise KeyError(kind)
            parts.append(kind)
        parts += [(type(args[i]), args[i]) for i in self.constants]
        parts += [args[i] for i in self.keys]
        return tuple(parts)

    def remember(self, args: tuple[Any, ...], launch: Launch) -> None:
        """Keep ``launch`` for later calls with the facts of ``args``."""
        try:
            key = self.key(args)
            hash(key)
        except (KeyError, TypeError, AttributeError):
            return
        if len(self.plans) >= _LIMIT:
            self.plans.clear()
        self.plans[key] = launch

    def call(self, args: tuple[Any, ...]) -> int | None:
        """The library's status for a remembered call, or None (a miss: nothing ran)."""
        try:
            launch = self.plans[self.key(args)]
        except (KeyError, TypeError, AttributeError):
            return None
        arguments = launch.arguments
        pointer_of = self.pointer_of
        for i in self.tensors:
            arguments[i].data = pointer_of(args[i])
        for i in self.scalars:
            value = arguments[i]._value
            try:
                value.value = args[i]
            except TypeError:  # a float for an int: the full path says so
                return None
            if type(args[i]) is int and value.value != args[i]:  # an int it cannot hold
                return None
        return launch()
