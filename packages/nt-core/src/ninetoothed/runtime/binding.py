"""Binding a kernel call's arguments to its parameters, with clear errors.

Every framework adapter runs the same checks, so they live here: argument
count, which arguments are tensors and which scalars, ranks, declared sizes
and dtypes (a dtype mismatch warns, see :func:`bind_call`), dtypes Triton
kernels can take, device agreement, and the keyword
arguments that give constexpr and run-time symbols (or pin meta symbols,
skipping auto-tuning), and the source sizes the arrangement ties together
(:mod:`ninetoothed.spec._agreement`, derived once per kernel).  A tensor parameter
that only constexpr-guarded code touches, and that this call's constexprs
switch off (:mod:`ninetoothed.spec._guards`), is unused: its argument (a placeholder,
as upstream's libraries pass) is checked for its kind and rank only, ties no
size, and the kernel gets a one-element stand-in of the call's device.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

from ninetoothed.arrangement.dtype import CANONICAL_NAMES, TRITON_DTYPES
from ninetoothed.arrangement.symbol import is_power_of_two, takes_powers_of_two
from ninetoothed.errors import DeclaredDtypeWarning, LaunchError, user_stacklevel
from ninetoothed.runtime.hookspecs import TensorInfo
from ninetoothed.spec._agreement import Agreement
from ninetoothed.spec.kernel_spec import KernelSpec
from ninetoothed.spec.parameter import ParameterCheck

__all__ = ["BoundCall", "Placeholder", "arity_error", "bind_call", "canonical_call"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The integers a kernel's scalar parameters can take."""

Placeholder = Callable[[tuple[int, ...], str, str], Any]
"""``(shape, dtype name, device) -> tensor``: a framework's stand-in for an unused
parameter (None where the framework cannot make one)."""


class BoundCall(NamedTuple):
    """A validated call: per-tensor descriptions and every keyword value."""

    tensors: list[TensorInfo]
    """One per tensor parameter, in parameter order."""

    tensor_arguments: list[Any]
    """The host tensors, in the same order."""

    scalars: dict[str, Any]
    """Scalar parameters, constexpr/run-time symbols, and pinned meta symbols."""

    device: str

    unused: frozenset[int] = frozenset()
    """Indices (among the tensor parameters) of the parameters this call leaves unused:
    their entries in :attr:`tensors` and :attr:`tensor_arguments` are the stand-ins."""


BOOL_AS = ("int8", "uint8")
"""Declared dtypes that take a bool tensor too: upstream has no bool constant, so its
programs declare bool data as bytes (ntops's ``all``), and a bool tensor stores one
byte of 0 or 1 per element, as Triton's bool pointers do."""


def bind_call(
    spec: KernelSpec,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    framework: str,
    recognizes: Callable[[object], bool],
    describe: Callable[[Any], TensorInfo],
    placeholder: Placeholder | None = None,
    strict_dtypes: bool = False,
) -> BoundCall:
    """Check a call against ``spec`` and describe its tensors.

    Raises :class:`LaunchError` naming the parameter and what was expected.
    Everything that does not depend on the arguments comes precomputed from
    ``spec.call_checks``: this runs on every kernel call, which is also why
    the per-tensor checks stay inline rather than in helper functions.
    ``placeholder`` makes the stand-ins of unused parameters; without it every
    parameter is checked.  An argument whose dtype differs from its parameter's
    declared one runs with a :class:`DeclaredDtypeWarning` (the generated code
    takes its element types from the arguments, as upstream's), or is refused
    with ``strict_dtypes`` (ahead-of-time kernels, compiled for the declared dtypes).
    """
    checks = spec.call_checks
    if len(args) != len(checks):
        raise arity_error(spec.label, [check.name for check in checks], len(args))
    unused: frozenset[int] = frozenset()
    if spec.conditional and placeholder is not None:
        unused = spec.unused_parameters(constexpr_values(checks, args, kwargs))
    tensors: list[TensorInfo] = []
    tensor_arguments: list[Any] = []
    scalars: dict[str, Any] = {}
    device: str | None = None
    first_device_parameter = ""
    for check, argument in zip(checks, args):
        if check.is_scalar:
            scalars[check.name] = _scalar(spec, check, argument, framework, recognizes)
            continue
        if not recognizes(argument):
            kind = type(argument)
            raise LaunchError(
                f"{spec.label}: parameter {check.name!r} expects a {framework} tensor of "
                f"{check.ndim} dimensions, got {kind.__module__}.{kind.__qualname__}"
                " (all tensor arguments of one call must come from one framework)"
            )
        info = describe(argument)
        if len(info.shape) != check.ndim:
            raise LaunchError(
                f"{spec.label}: parameter {check.name!r} expects {check.ndim} dimensions, "
                f"got a tensor of shape {info.shape} ({len(info.shape)} dimensions)"
            )
        if unused and len(tensors) in unused:  # replaced by a stand-in below
            tensors.append(info)
            tensor_arguments.append(argument)
            continue
        for dim, size in check.fixed_sizes:
            if info.shape[dim] != size:
                raise LaunchError(
                    f"{spec.label}: parameter {check.name!r} expects size {size} in "
                    f"dimension {dim}, got shape {info.shape}"
                )
        if (
            check.dtype is not None
            and check.dtype != info.dtype
            and not (info.dtype == "bool" and check.dtype in BOOL_AS)
        ):
            message = (
                f"{spec.label}: parameter {check.name!r} expects dtype {check.dtype}, "
                f"got {info.dtype}"
            )
            if strict_dtypes:
                raise LaunchError(message)
            warnings.warn(
                f"{message}; the kernel runs on {info.dtype}, as upstream's just-in-time "
                f"kernels do (ahead-of-time builds take {check.dtype} only)",
                DeclaredDtypeWarning,
                stacklevel=user_stacklevel(),
            )
        if info.dtype not in TRITON_DTYPES:
            raise LaunchError(
                f"{spec.label}: parameter {check.name!r} is a {framework} tensor of dtype "
                f"{info.dtype}, which Triton kernels cannot take (supported: "
                f"{', '.join(CANONICAL_NAMES)})"
            )
        if device is None:
            device, first_device_parameter = info.device, check.name
        elif info.device != device:
            raise LaunchError(
                f"{spec.label}: all tensors must be on one device; {first_device_parameter!r} is "
                f"on {device} but {check.name!r} is on {info.device}"
            )
        tensors.append(info)
        tensor_arguments.append(argument)

    if device == "meta":  # all on it: a mixed call fails the device agreement above
        raise LaunchError(
            f"{spec.label}: parameter {first_device_parameter!r} is a tensor on the meta "
            "device, which has a shape but no data; kernels run on tensors with data (on a "
            "GPU, or on the CPU with TRITON_INTERPRET=1)"
        )
    if unused and (
        device is None
        or not _stand_in(spec, unused, tensors, tensor_arguments, device, placeholder, describe)
    ):
        # No used tensor gives the device, or the framework has no stand-in: check all.
        return bind_call(
            spec,
            args,
            kwargs,
            framework=framework,
            recognizes=recognizes,
            describe=describe,
            strict_dtypes=strict_dtypes,
        )
    for agreement in spec.agreements:
        dims = [d for d in agreement.dims if d[0] not in unused] if unused else agreement.dims
        if not dims:
            continue
        first, first_dim = dims[0]
        size = tensors[first].shape[first_dim]
        for other, dim in dims[1:]:
            if tensors[other].shape[dim] != size:
                _check_with_broadcasts(spec, agreement, tensors, dims)
                break
    if kwargs or spec.required_symbols:
        _bind_keywords(spec, kwargs, scalars)
    return BoundCall(tensors, tensor_arguments, scalars, device or "cpu", unused)


def constexpr_values(
    checks: Sequence[ParameterCheck], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The call's constexpr values by name: constexpr scalar parameters (fixed at
    ``make`` or given) and keyword symbols, as the kernel will see them."""
    values = dict(kwargs)
    for check, argument in zip(checks, args):
        if check.constexpr:
            values[check.name] = argument if check.fixed_value is None else check.fixed_value
    return values


def _stand_in(
    spec: KernelSpec,
    unused: frozenset[int],
    tensors: list[TensorInfo],
    tensor_arguments: list[Any],
    device: str,
    placeholder: Placeholder | None,
    describe: Callable[[Any], TensorInfo],
) -> bool:
    """Put a one-element tensor of the call's device in place of each unused argument,
    of the declared dtype (else the argument's, if kernels take it, else float32).
    False if the framework made none."""
    checks = [check for check in spec.call_checks if not check.is_scalar]
    for index in sorted(unused):
        check, given = checks[index], tensors[index]
        dtype = check.dtype or (given.dtype if given.dtype in TRITON_DTYPES else "float32")
        stand_in = placeholder((1,) * check.ndim, dtype, device) if placeholder else None
        if stand_in is None:
            return False
        tensors[index] = describe(stand_in)
        tensor_arguments[index] = stand_in
    return True


def canonical_call(
    spec: KernelSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A call in the form the adapters take: every parameter positional, symbols by keyword.

    Upstream's launch function is ``launch(<tensors>, <constexpr symbols>)``
    (:attr:`KernelSpec.argument_names`), so a call may give the constexpr
    symbols positionally after the parameters, and a tensor by the keyword
    of its ``Tensor(name=...)``.  Raises :class:`LaunchError` for too many
    positional arguments, a value given both ways, or a parameter missing
    among keyword-given ones.  Calls already in the adapters' form come back
    as they are (the same objects: the fast path's miss tells a rewritten call
    by that).
    """
    count = len(spec.parameters)
    names = spec.argument_names
    # A loop rather than dict_keys.isdisjoint, which Dynamo (torch 2.13) cannot trace.
    if len(args) <= count and (not kwargs or not any(name in kwargs for name in names[:count])):
        return args, kwargs  # the adapters' form (or too few: bind_call names the count)
    if len(args) > len(names):
        _too_many(spec, len(args))
    given = names[: len(args)]
    keywords = dict(kwargs)
    for position, name in enumerate(given):
        if name in keywords:
            raise LaunchError(
                f"{spec.label}: got two values for {_describe(spec, position)}: "
                f"{_short(args[position])} positionally (argument {position}) and "
                f"{_short(keywords[name])} by keyword"
            )
        if position >= count:
            keywords[name] = args[position]
    missing = [p for p in range(len(args), count) if names[p] not in keywords]
    if missing:
        raise LaunchError(
            f"{spec.label}: missing {' and '.join(_describe(spec, p) for p in missing)}; the "
            f"parameters are {', '.join(names[:count])}, given positionally or by keyword"
        )
    parameters = [*args[:count], *(keywords.pop(names[p]) for p in range(len(args), count))]
    return tuple(parameters), keywords


def arity_error(label: str, names: Sequence[str], got: int) -> LaunchError:
    """The error for a call with ``got`` positional arguments of the ``names`` a kernel
    (``label``) takes; a call short of them names each parameter it leaves out."""
    message = f"{label} takes {len(names)} positional arguments ({', '.join(names)}), got {got}"
    if got < len(names):
        left_out = names[got:]
        message += f"; missing {'parameter' if len(left_out) == 1 else 'parameters'} "
        message += ", ".join(repr(name) for name in left_out)
    return LaunchError(message)


def _too_many(spec: KernelSpec, got: int) -> NoReturn:
    """Raise the error for more positional arguments than upstream's signature has."""
    parameters = ", ".join(p.name for p in spec.parameters)
    symbols = spec.positional_symbols
    if not symbols:
        raise LaunchError(
            f"{spec.label} takes {len(spec.parameters)} positional arguments ({parameters}), "
            f"got {got} (it has no constexpr symbols to give after them)"
        )
    raise LaunchError(
        f"{spec.label} takes {len(spec.parameters)} parameters ({parameters}) and then its "
        f"constexpr symbols ({', '.join(symbols)}), at most {len(spec.argument_names)} "
        f"positional arguments, got {got}"
    )


def _describe(spec: KernelSpec, position: int) -> str:
    """Argument ``position`` of upstream's signature, as an error names it."""
    if position >= len(spec.parameters):
        return f"constexpr symbol {spec.argument_names[position]!r}"
    parameter = spec.parameters[position]
    if parameter.source.name == parameter.name:
        return f"parameter {parameter.name!r}"
    keyword = parameter.source.name
    return f"parameter {parameter.name!r} (by keyword: {keyword!r}, its Tensor's name)"


def _short(value: Any) -> str:
    """A value for an error message: numbers as they are, anything else by its type."""
    if isinstance(value, (int, float, bool, str)) or value is None:
        return repr(value)
    return f"a {type(value).__module__}.{type(value).__qualname__}"


def _check_with_broadcasts(
    spec: KernelSpec,
    agreement: Agreement,
    tensors: list[TensorInfo],
    dims: Sequence[tuple[int, int]],
) -> None:
    """Sizes tied by ``agreement`` that differ: accept a broadcast view (stride 0 along
    the dimension) at least as long as the others, refuse anything else.

    Every index of a broadcast view reads one value, so the indices past the
    others' end hold nothing the others' indices do not: ntops's attention
    expands an ``(L, S)`` mask to every query head and reads it at the key-value
    head's index.  A written argument cannot be such a view (it would overlap
    itself, which the kernel's aliasing check refuses).
    """
    broadcast = [(i, d) for i, d in dims if tensors[i].strides[d] == 0]
    real = [(i, d) for i, d in dims if tensors[i].strides[d] != 0] or broadcast[:1]
    first = real[0]
    size = tensors[first[0]].shape[first[1]]
    for other in real[1:] + broadcast:
        other_size = tensors[other[0]].shape[other[1]]
        if other_size != size and not (other in broadcast and other_size > size):
            _disagree(spec, agreement, tensors, first, other)


def _disagree(
    spec: KernelSpec,
    agreement: Agreement,
    tensors: list[TensorInfo],
    left: tuple[int, int],
    right: tuple[int, int],
) -> NoReturn:
    """Raise the error for two source sizes that the arrangement ties but differ."""
    names = [p.name for p in spec.tensor_parameters]
    described = [
        f"{names[i]!r} (shape {tuple(tensors[i].shape)}, dimension {d}: {tensors[i].shape[d]})"
        for i, d in (left, right)
    ]
    raise LaunchError(
        f"{spec.label}: {described[0]} and {described[1]} must have the same size: "
        f"{agreement.reason}"
    )


def _scalar(
    spec: KernelSpec,
    check: ParameterCheck,
    argument: Any,
    framework: str,
    recognizes: Callable[[object], bool],
) -> Any:
    """The value of a scalar (``Tensor(0)``) parameter, checked."""
    if check.fixed_value is not None:
        # Upstream's callers pass the value again (ntops's rms_norm passes
        # ``math.prod(normalized_shape)``): the same value, or None, is fine.
        if argument is not None and not _same_value(argument, check.fixed_value):
            raise LaunchError(
                f"{spec.label}: parameter {check.name!r} is fixed at make time to "
                f"{check.fixed_value!r} (Tensor(value=...)), got {argument!r}; pass "
                f"{check.fixed_value!r} or None for it"
            )
        return check.fixed_value
    if recognizes(argument):
        raise LaunchError(
            f"{spec.label}: parameter {check.name!r} is a scalar (Tensor(0)), "
            f"got a {framework} tensor; pass a Python number"
        )
    if not isinstance(argument, (int, float, bool)):
        raise LaunchError(
            f"{spec.label}: parameter {check.name!r} is a scalar (Tensor(0)), got "
            f"{type(argument).__name__} {argument!r}"
            + ("; pass a number (None only for a value fixed at make)" if argument is None else "")
        )
    if isinstance(argument, int) and not INT64_MIN <= argument <= INT64_MAX:
        raise LaunchError(
            f"{spec.label}: parameter {check.name!r} is {argument}, which does not fit in 64 "
            f"bits (kernels take integers from {INT64_MIN} to {INT64_MAX})"
        )
    return argument


def _bind_keywords(spec: KernelSpec, kwargs: Mapping[str, Any], scalars: dict[str, Any]) -> None:
    """Check the keyword arguments (symbol values) and add them to ``scalars``."""
    symbol_kinds = spec.symbol_kinds
    for name, value in kwargs.items():
        kind = symbol_kinds.get(name)
        if kind is None:
            known = ", ".join(sorted(symbol_kinds)) or "none"
            raise LaunchError(
                f"{spec.label}: unexpected keyword argument {name!r} (symbols it takes: {known})"
            )
        if not isinstance(value, (int, float, bool)):
            raise LaunchError(
                f"{spec.label}: symbol {name!r} must be given a number, got "
                f"{type(value).__name__} {value!r}"
            )
        if (kind == "meta" or name in spec.tile_symbols) and (type(value) is not int or value <= 0):
            raise LaunchError(
                f"{spec.label}: {kind} symbol {name!r} is a tile size and takes a positive int, "
                f"got {type(value).__name__} {value!r}"
            )
        if (
            kind == "meta"
            and takes_powers_of_two(spec.meta_symbols[name])
            and not is_power_of_two(value)
        ):
            raise LaunchError(
                f"{spec.label}: meta symbol {name!r} takes powers of two (tiles are powers of "
                f"two; declare it with power_of_two=False for any integer), got {value!r}"
            )
        scalars[name] = value
    missing = spec.required_symbols - kwargs.keys()
    if missing:
        constexpr = sorted(missing & spec.constexpr_symbols.keys())
        runtime = sorted(missing - spec.constexpr_symbols.keys())
        first = (constexpr or runtime)[0]
        parts = [f"constexpr symbol(s) {', '.join(constexpr)}"] if constexpr else []
        parts += [f"run-time symbol(s) {', '.join(runtime)}"] if runtime else []
        how = (
            [
                "constexpr symbols are given after the parameters, positionally (in the order "
                f"{', '.join(spec.positional_symbols)}) or by keyword"
            ]
            if spec.positional_symbols
            else []
        )
        how += ["run-time symbols by keyword"] if spec.runtime_symbols else []
        raise LaunchError(
            f"{spec.label}: missing {' and '.join(parts)}: {'; '.join(how)}; e.g. "
            f"{spec.name}(..., {first}=...)"
        )


def _same_value(argument: Any, fixed: Any) -> bool:
    """Whether a call's ``argument`` restates the value fixed at make time."""
    try:
        return bool(argument == fixed) and type(argument) is not str
    except Exception:  # an object whose comparison fails is not the same value
        return False
