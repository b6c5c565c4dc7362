"""Functional and differentiable kernels on JAX arrays (:mod:`ninetoothed.runtime.autodiff`).

JAX kernels are functional already: ``run`` passes a ``jax.ShapeDtypeStruct``
for each output the kernel only writes and the input array for one it reads
and writes, and returns the kernel's results.  ``differentiate`` wraps a
declaration in ``jax.custom_vjp``, with Python-number arguments (the kernels'
scalars) as non-differentiable ones (``nondiff_argnums``); the backward's ``None``
gradients of arrays become zeros.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.autodiff import Differentiable, Functional

__all__ = ["concat", "differentiate", "needs_grad", "refuse_differentiation", "run"]


def run(functional: Functional, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Launch the kernel functionally; the outputs in parameter order."""
    arguments, _ = functional.kernel_arguments(args, _shape_dtype, _same)
    results = functional.kernel(*arguments, **kwargs)
    return results if isinstance(results, tuple) else (results,)


def _shape_dtype(shape: tuple[int, ...], like: Any, dtype: str | None) -> Any:
    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype) if dtype else like.dtype)  # type: ignore[no-untyped-call]


def _same(array: Any) -> Any:
    return array  # arrays are immutable: the kernel returns a new one


def differentiate(declaration: Differentiable) -> Callable[..., Any]:
    """A callable running ``declaration`` as a ``jax.custom_vjp`` function."""
    cache: dict[Any, Callable[..., Any]] = {}

    def build(kwargs: dict[str, Any], static: tuple[int, ...]) -> Callable[..., Any]:
        @functools.partial(jax.custom_vjp, nondiff_argnums=static)
        def function(*args: Any) -> Any:
            return declaration.shown(declaration.forward_outputs(args, kwargs))

        def forward(*args: Any) -> Any:
            outputs = declaration.forward_outputs(args, kwargs)
            result = declaration.shown(outputs)
            return result, (tuple(a for i, a in enumerate(args) if i not in static), outputs)

        def backward(*rest: Any) -> Any:
            scalars, (arrays, outputs), grads = rest[: len(static)], rest[-2], rest[-1]
            grads = grads if isinstance(grads, tuple) else (grads,)
            args = _merge(len(static) + len(arrays), static, scalars, arrays)
            gradients = declaration.gradients(args, tuple(outputs), grads)
            return tuple(
                _zero_like(args[i]) if gradients[i] is None else gradients[i]
                for i in range(len(args))
                if i not in static
            )

        function.defvjp(forward, backward)
        return function

    def call(*args: Any, **kwargs: Any) -> Any:
        # Python numbers (the kernels' scalars) and None are not differentiated.
        static = tuple(i for i, a in enumerate(args) if a is None or isinstance(a, _STATIC))
        key = (static, tuple(sorted(kwargs.items())))
        function = cache.get(key)
        if function is None:
            function = cache[key] = build(kwargs, static)
        return function(*args)

    return call


_STATIC = (bool, int, float, str)


def needs_grad(args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether an argument is traced (``jit``, ``grad``, ``vmap``): then an op must go
    through its ``custom_vjp``, which a ``grad`` around a ``jit`` differentiates.
    Concrete arrays cannot be differentiated: the plain op runs."""
    for argument in args:
        if isinstance(argument, _Tracer):
            return True
    return bool(kwargs) and any(isinstance(a, _Tracer) for a in kwargs.values())


_Tracer = jax.core.Tracer


def _merge(
    count: int, static: tuple[int, ...], scalars: tuple[Any, ...], arrays: tuple[Any, ...]
) -> tuple[Any, ...]:
    """The inputs in order, from the scalars (at ``static``) and the arrays."""
    scalar_iter, array_iter = iter(scalars), iter(arrays)
    return tuple(next(scalar_iter) if i in static else next(array_iter) for i in range(count))


def _zero_like(arg: Any) -> Any:
    return jnp.zeros_like(arg)


_DIFFERENTIATING_TRACERS = frozenset({"JVPTracer", "LinearizeTracer"})


def refuse_differentiation(kernel_name: str, args: tuple[Any, ...]) -> None:
    """Raise if ``jax.grad``/``jvp`` traces a kernel call that has no declared backward.

    JAX's own error there ("Pure callbacks do not support JVP", or an XLA
    custom call without a rule) does not say what to do.
    """
    for position, argument in enumerate(args):
        if type(argument).__name__ in _DIFFERENTIATING_TRACERS:
            raise LaunchError(
                f"{kernel_name}: argument {position} is being differentiated (jax.grad, jvp or "
                "vjp), but the kernel has no backward; declare one with "
                "ninetoothed.differentiable(kernel, backward), or wrap the input in "
                "jax.lax.stop_gradient"
            )


def concat(tensors: list[Any], axis: int) -> Any:
    """``jnp.concatenate`` (for :mod:`ninetoothed.library.gradients`)."""
    return jnp.concatenate(tensors, axis)
