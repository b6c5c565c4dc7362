"""Eager JAX calls of a kernel: one ``jax.jit`` of the launch per pattern of argument types.

Outside ``jax.jit`` a call's arguments are concrete arrays, shape structs and
Python values.  Tracing the launch (validation, the custom call or callback)
on every call would cost a trace each time, so a kernel's eager calls go
through ``jax.jit``-ed launches, one per *pattern* of argument types (which
positions hold arrays): the arrays are the jitted function's arguments, every
other argument and every keyword is static.  JAX's own dispatch then keys its
compiled programs by the arrays' shapes, dtypes and placement and by the
static values, in C++: a repeated call costs one dict lookup here plus that
dispatch, and a new shape, dtype, placement or static value traces (and
validates) again.

Calls whose arguments are tracers (``jax.jit``, ``vmap``, ``grad`` around the
call) never match a pattern (tracers are other types) and go the general way.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import jax

from ninetoothed.runtime.hookspecs import GeneratedKernel
from nt_triton import compile_errors_named

Launch = Callable[[GeneratedKernel, tuple[Any, ...], dict[str, Any]], Any]
"""``launch(kernel, args, kwargs)``: validates and launches (or stages the launch)."""


class EagerCalls:
    """A kernel's jitted eager launches, by pattern of argument types (see the module)."""

    def __init__(self, kernel: GeneratedKernel, launch: Launch, miss: Callable[..., Any]) -> None:
        self.by_types: dict[tuple[type, ...], Any] = {}
        """The jitted launch for each pattern of argument types seen in an eager call."""
        self.keywords = frozenset(kernel.spec.symbol_kinds)
        """Keywords a call may give (the kernel's symbols): static in every jitted launch."""
        self.traces = 0
        """How often a jitted launch was traced (a new pattern, shape, dtype or static value)."""
        self.miss = miss
        """Where calls without a jitted launch go: ``miss(args, kwargs)``."""
        self._kernel = weakref.ref(kernel)
        self._launch = launch

        def method(_kernel: Any, *args: Any, **kwargs: Any) -> Any:
            return self._through(self.miss, args, kwargs)

        self.method: Callable[..., Any] = method
        """:meth:`call` with a first parameter it ignores (a kernel class's ``__call__``)."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """The call through its jitted launch, or through :attr:`miss` when there is none."""
        return self._through(self.miss, args, kwargs)

    def hot(self, miss: Callable[..., Any]) -> Callable[..., Any]:
        """:meth:`call` with its misses sent to ``miss``."""
        return lambda *args, **kwargs: self._through(miss, args, kwargs)

    def _through(
        self, miss: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        jitted = self.by_types.get(tuple(map(type, args)))
        if jitted is None or (kwargs and not self.keywords.issuperset(kwargs)):
            return miss(args, kwargs)
        return jitted(*args, **kwargs)

    def first(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """An eager call of a new pattern: make its jitted launch, run it, keep it.

        The launch is kept only once it ran (a call that fails validation
        keeps nothing) and only if the static arguments hash (an unhashable one
        is reported by the general path's validation).
        """
        static = tuple(i for i, a in enumerate(args) if not isinstance(a, jax.Array))
        try:
            hash(tuple(args[i] for i in static))
        except TypeError:
            return self._launch(self._target(), args, kwargs)
        reference = self._kernel

        def launch(*arguments: Any, **keywords: Any) -> Any:
            self.traces += 1
            target = reference()
            assert target is not None, "the kernel was freed"
            return self._launch(target, arguments, keywords)

        jitted = jax.jit(launch, static_argnums=static, static_argnames=tuple(self.keywords))
        spec = getattr(self._target(), "spec", None)
        name, application = (spec.label, spec.application) if spec else ("kernel", None)
        with compile_errors_named(name, application):  # jax-triton compiles as XLA lowers
            result = jitted(*args, **kwargs)
        self.by_types[tuple(map(type, args))] = jitted
        return result

    def launch_bound(self, *_: Any) -> None:
        """Not used: JAX calls return arrays, they never launch into given buffers."""
        raise NotImplementedError("JAX kernels launch through EagerCalls.call")

    def _target(self) -> GeneratedKernel:
        target = self._kernel()
        assert target is not None, "the kernel was freed"
        return target
