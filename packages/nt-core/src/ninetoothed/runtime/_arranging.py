"""From ``make``'s arguments to a :class:`~ninetoothed.spec.kernel_spec.KernelSpec`.

The arrangement is called on the symbolic tensors (with meta symbols named
after its block-size parameters), its result checked, and the spec built.
Shared by :func:`ninetoothed.make` and the ahead-of-time builds, which make
one spec per variant.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ninetoothed.arrangement.names import renamed
from ninetoothed.arrangement.symbol import Symbol, is_block_size
from ninetoothed.arrangement.tensor import Tensor
from ninetoothed.errors import ArrangementError, MetaOperationError, kernel_label, labelled
from ninetoothed.spec._build import build_spec, kernel_name
from ninetoothed.spec.kernel_spec import KernelSpec

__all__ = ["make_spec", "named_block_sizes"]


def make_spec(
    arrangement: Callable[..., Any],
    application: Callable[..., Any],
    tensors: Sequence[Any],
    name: str | None,
    options: dict[str, Any],
) -> KernelSpec:
    """The :class:`KernelSpec` of :func:`make`'s arguments (``options`` checked already).

    Errors about the kernel begin with its label
    (:func:`~ninetoothed.errors.kernel_label`), given here for all of them.
    """
    for role, function in (("arrangement", arrangement), ("application", application)):
        if not callable(function):
            raise TypeError(f"make: {role} must be a function, got {type(function).__name__}")
    with labelled(kernel_label(kernel_name(name, application), application)):
        return _arranged_spec(arrangement, application, tuple(tensors), name, options)


def _arranged_spec(
    arrangement: Callable[..., Any],
    application: Callable[..., Any],
    tensors: tuple[Any, ...],
    name: str | None,
    options: dict[str, Any],
) -> KernelSpec:
    """Call the arrangement on ``tensors``, check its result, build the spec."""
    try:
        arranged = arrangement(*tensors, **named_block_sizes(arrangement, len(tensors)))
    except MetaOperationError as error:
        raise MetaOperationError(_named_by_arrangement(str(error), arrangement, tensors)) from error
    except (AttributeError, TypeError) as error:
        others = _not_tensors(arrangement, tensors)
        if not others:
            raise
        # A value where the arrangement expected a tensor (``(Tensor(1), 3)``): say so.
        raise ArrangementError(
            f"the arrangement {getattr(arrangement, '__qualname__', arrangement)} raised "
            f"{type(error).__name__}: {error}; make was given {others}, not a Tensor: give "
            "each tensor parameter a ninetoothed.Tensor (a constant as Tensor(0, "
            "constexpr=True, value=...))"
        ) from error
    if isinstance(arranged, Tensor):
        arranged = (arranged,)
    if not isinstance(arranged, (tuple, list)):
        raise ArrangementError(
            f"the arrangement {getattr(arrangement, '__name__', arrangement)} must return a "
            f"tuple of tensors, got {type(arranged).__name__}"
        )
    sources = tuple(tensor for tensor in tensors if isinstance(tensor, Tensor))
    return build_spec(application, sources, tuple(arranged), name=name, options=options)


def _not_tensors(arrangement: Callable[..., Any], tensors: tuple[Any, ...]) -> str:
    """The values of ``tensors`` that are not Tensors, each with the arrangement's
    parameter that received it (empty when every value is a Tensor)."""
    try:
        parameters = list(inspect.signature(arrangement).parameters)
    except (TypeError, ValueError):
        parameters = []
    return ", ".join(
        f"{type(value).__name__} {value!r} for "
        + (repr(parameters[position]) if position < len(parameters) else f"argument {position}")
        for position, value in enumerate(tensors)
        if not isinstance(value, Tensor)
    )


def _named_by_arrangement(
    message: str, arrangement: Callable[..., Any], tensors: tuple[Any, ...]
) -> str:
    """``message`` with the tensors' generated names (``ninetoothed_tensor_7``) replaced
    by the arrangement's parameters that received them, and the arrangement named."""
    try:
        parameters = list(inspect.signature(arrangement).parameters)
    except (TypeError, ValueError):
        parameters = []
    labels = {
        tensor.name: parameters[position] if position < len(parameters) else f"argument {position}"
        for position, tensor in enumerate(tensors)
        if isinstance(tensor, Tensor)
    }
    return f"{getattr(arrangement, '__qualname__', 'the arrangement')}: {renamed(message, labels)}"


def named_block_sizes(arrangement: Callable[..., Any], positional: int = 0) -> dict[str, Symbol]:
    """Meta symbols for the arrangement's parameters that default to ``block_size()``.

    Each takes the parameter's name, so it is the same in every script and a
    call can pin it by that name (``BLOCK_SIZE_M=64``).  Upstream names them
    ``ninetoothed_BLOCK_SIZE_<n>`` and cannot pin them at call time; a
    parameter given one default twice keeps them tied (the first name wins).
    The first ``positional`` parameters are filled by the call's tensors (and
    compile-time values), so they are left alone.
    """
    try:
        parameters = inspect.signature(arrangement).parameters.values()
    except (TypeError, ValueError):  # builtins, odd callables: keep their defaults
        return {}
    renamed: dict[int, Symbol] = {}
    values: dict[str, Symbol] = {}
    filled = 0  # parameters the call's positional values take
    for parameter in parameters:
        if parameter.kind is parameter.VAR_POSITIONAL:
            filled = positional  # ``*tensors`` takes every positional value left
            continue
        if parameter.kind is not parameter.KEYWORD_ONLY and filled < positional:
            filled += 1
            continue
        default = parameter.default
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            continue
        if not is_block_size(default) or not parameter.name.isidentifier():
            continue
        if id(default) not in renamed:
            renamed[id(default)] = Symbol(
                parameter.name,
                meta=True,
                lower_bound=default.lower_bound,
                upper_bound=default.upper_bound,
                power_of_two=True,
            )
        values[parameter.name] = renamed[id(default)]
    return values
