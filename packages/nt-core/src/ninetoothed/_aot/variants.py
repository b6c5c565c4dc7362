"""``build``'s configurations: checked, made into specs, split into keys and tuned values.

Each configuration ``(args, kwargs, compilation_configs)`` is bound to
``premake``'s signature (defaults applied), so every parameter has a value;
the parameters named in ``meta_parameters``, and the compilation
configurations, are the tuned values; the other parameters are the key, as
the library's ``int`` parameters named ``<parameter>_`` (upstream's names).
Without ``meta_parameters`` nothing is tuned and the compilation
configurations are key parameters too (``num_warps``), matching any value
for a configuration that does not set them.  Keyword arguments ``premake``
does not take give the values of the kernel's constexprs a call gives
(:mod:`.constexprs`): symbols are key parameters after ``premake``'s, scalars
select the variant by their argument.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ninetoothed._aot.constexprs import split_given
from ninetoothed._aot.sizes import run_time_sizes
from ninetoothed.aot import BuildVariant, key_value
from ninetoothed.arrangement.dtype import DataType
from ninetoothed.runtime._arranging import make_spec
from ninetoothed.runtime.options import check_options

__all__ = ["COMPILATION_CONFIGS", "Variants", "split"]

COMPILATION_CONFIGS = ("num_warps", "num_stages", "maxnreg")
"""What a configuration's third slot may set (``make``'s launch options)."""


@dataclass(frozen=True)
class Variants:
    """A build's variants and the names of its key parameters."""

    key_names: tuple[str, ...]
    variants: tuple[BuildVariant, ...]


@dataclass(frozen=True)
class _Config:
    index: int
    values: dict[str, Any]
    """Every ``premake`` parameter's value (defaults applied)."""
    compilation: dict[str, Any]
    spec: Any
    given: frozenset[str]
    """The parameters the configuration gives (not defaulted)."""
    symbols: dict[str, Any]
    """Values of the kernel's constexpr symbols the configuration gives (keys)."""
    scalars: dict[str, Any]
    """Values of its constexpr scalars without a value (selected by the argument)."""

    @property
    def constants(self) -> tuple[tuple[str, Any], ...]:
        """The constexprs' values the variant is compiled for."""
        return tuple({**self.symbols, **self.scalars}.items())


def split(
    premake: Callable[..., Any],
    configs: Sequence[Any],
    meta_parameters: Sequence[str] | None,
    kernel_name: str,
) -> Variants:
    """The variants of ``configs`` (raises naming the configuration for bad input)."""
    if not configs:
        raise ValueError("build: configs is empty; give at least one (args, kwargs, {}) triple")
    signature = inspect.signature(premake)
    made = [_made(premake, signature, i, c, kernel_name) for i, c in enumerate(configs)]
    names = [p.name for p in made[0].spec.parameters]
    for config in made[1:]:
        other = [p.name for p in config.spec.parameters]
        if other != names:
            raise ValueError(
                f"build: configs[{config.index}] makes a kernel of parameters {other}, "
                f"configs[0] one of {names}; every variant of a library takes the same ones"
            )
    if meta_parameters is None:
        return _untuned(made)
    return _tuned(made, tuple(meta_parameters), signature)


def _made(
    premake: Callable[..., Any],
    signature: inspect.Signature,
    index: int,
    config: Any,
    kernel_name: str,
) -> _Config:
    """One configuration bound, checked and made into a spec."""
    if not (isinstance(config, (tuple, list)) and len(config) == 3):
        raise TypeError(
            f"build: configs[{index}] must be an (args, kwargs, compilation_configs) triple, "
            f"got {config!r}"
        )
    args, kwargs, compilation = config
    # Keyword arguments premake does not take name the kernel's constexprs (checked below).
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    extra = {} if takes_any else {k: v for k, v in kwargs.items() if k not in signature.parameters}
    kwargs = {k: v for k, v in kwargs.items() if k not in extra}
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(
            f"build: configs[{index}] does not fit premake{signature}: {error}"
        ) from error
    given = frozenset(bound.arguments)
    bound.apply_defaults()
    unknown = sorted(set(compilation) - set(COMPILATION_CONFIGS))
    if unknown:
        raise TypeError(
            f"build: configs[{index}]'s compilation configurations set {', '.join(unknown)}; "
            f"they may set {', '.join(COMPILATION_CONFIGS)}"
        )
    result = premake(*args, **kwargs)
    if not (isinstance(result, (tuple, list)) and len(result) == 3):
        raise TypeError(
            f"build: premake must return (arrangement, application, tensors), got "
            f"{type(result).__name__} for configs[{index}]"
        )
    arrangement, application, tensors = result
    name, options = check_options("build", kernel_name, dict(compilation), ("name",))
    spec = make_spec(arrangement, application, run_time_sizes(tensors), name, options)
    try:
        symbols, scalars = split_given(spec, extra)
    except TypeError as error:
        raise TypeError(
            f"build: configs[{index}] does not fit premake{signature}: it {error}"
        ) from error
    return _Config(index, dict(bound.arguments), dict(compilation), spec, given, symbols, scalars)


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={_shown(value)}" for name, value in values.items())


def _shown(value: Any) -> str:
    return value.name if isinstance(value, DataType) else repr(value)


def _key(config: _Config, names: Sequence[str]) -> tuple[int | None, ...]:
    """The key values of ``config`` for the parameters ``names`` (None: not set)."""
    values = {**config.values, **config.compilation, **config.symbols}
    key: list[int | None] = []
    for name in names:
        if name not in values:
            key.append(None)
            continue
        try:
            key.append(key_value(values[name]))
        except TypeError as error:
            raise TypeError(
                f"build: configs[{config.index}] gives {name}={values[name]!r}, which cannot "
                f"select a variant at run time ({error}); list {name!r} in meta_parameters if it "
                "only changes speed"
            ) from error
    return tuple(key)


def _untuned(made: list[_Config]) -> Variants:
    """Every parameter and compilation configuration is key (nothing is tuned)."""
    names = list(dict.fromkeys(n for c in made for n in [*c.values, *c.compilation]))
    names += _symbols(made)
    key_names = tuple(f"{n}_" if n not in COMPILATION_CONFIGS else n for n in names)
    variants = []
    seen: dict[tuple[Any, ...], int] = {}
    for config in made:
        key = _key(config, names)
        _unique(seen, (key, _shown_values(config.scalars)), config.index)
        key_label = _label({**config.values, **config.compilation, **config.symbols})
        label = _label({**config.values, **config.compilation, **dict(config.constants)})
        variants.append(BuildVariant(config.spec, key, (), label, key_label, config.constants))
    return Variants(key_names, tuple(variants))


def _symbols(made: list[_Config]) -> list[str]:
    """The constexpr symbols the configurations give: key parameters after premake's."""
    return list(dict.fromkeys(n for c in made for n in c.symbols))


def _shown_values(values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((name, repr(value)) for name, value in values.items())


def _tuned(made: list[_Config], meta: tuple[str, ...], signature: inspect.Signature) -> Variants:
    """The parameters outside ``meta`` are key; ``meta`` and compilation configurations tuned."""
    for name in meta:
        if name not in signature.parameters:
            raise ValueError(
                f"build: meta_parameters names {name!r}, which premake{signature} does not take"
            )
        if not any(name in _given(c) for c in made):
            raise ValueError(
                f"build: meta_parameters names {name!r}, but no configuration gives it a value: "
                "nothing to tune (give it in the configurations' kwargs)"
            )
    names = [n for n in made[0].values if n not in meta] + _symbols(made)
    key_names = tuple(f"{n}_" for n in names)
    variants = []
    seen: dict[tuple[Any, ...], int] = {}
    for config in made:
        key = _key(config, names)
        tuned = tuple((n, config.values[n]) for n in meta) + tuple(
            (n, config.compilation[n]) for n in COMPILATION_CONFIGS if n in config.compilation
        )
        _unique(
            seen, (key, _shown_values(dict(tuned)), _shown_values(config.scalars)), config.index
        )
        chosen = {**config.values, **config.symbols}
        key_label = _label({n: chosen[n] for n in names if n in chosen})
        label = _label({**config.values, **config.compilation, **dict(config.constants)})
        variants.append(BuildVariant(config.spec, key, tuned, label, key_label, config.constants))
    return Variants(key_names, tuple(variants))


def _given(config: _Config) -> set[str]:
    return set(config.given) | set(config.compilation)


def _unique(seen: dict[Any, int], key: Any, index: int) -> None:
    """Refuse a second configuration with the same key and values."""
    if key in seen:
        raise ValueError(
            f"build: configs[{seen[key]}] and configs[{index}] are the same variant (same key "
            "and tuned values); remove one"
        )
    seen[key] = index
