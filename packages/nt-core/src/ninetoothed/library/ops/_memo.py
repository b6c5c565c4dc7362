"""A per-signature memo of the library ops' decisions: a repeated call goes straight to
its allocations and kernel launches.

An op checks its arguments, works out shapes and picks kernel variants from
what it reads of them through the framework's hook, and nothing else; all of
that is a function of the call's *signature*: each tensor's type, shape,
strides, dtype and device (the framework's ``signature`` hook), which
arguments are one and the same tensor, every other argument's type and value,
and the settings that steer the choices (:data:`SETTINGS`: pinned block
sizes and split counts; for the ops that multiply matrices, the framework's
float32 product precision, :mod:`~ninetoothed.library.ops._precision`).  A
signature's first call runs the op as is.  Its
second runs it on a :class:`~ninetoothed.library.ops._recording.Recorder`,
which notes each allocation, reshape and kernel run; the notes become a plan,
a generated function repeating them on a new call's tensors without a check.
Later calls of that signature run the plan: the kernels' own fast paths still
check what they check (pointer alignment, overlaps, tensors requiring grad),
and launch from the kernel's plan of the moment (its configuration, tuned
perhaps after the op's recording), but not whether the call is traced:
the memo asked that once, first thing.

A repeated call costs one tracing check, the key of its form (a function
generated per form of call, :mod:`~ninetoothed.library.ops._keys`), one dict
lookup and the plan.

Bad input always meets the op's errors: an error stores nothing, so only a
signature the op accepted has a plan.  A call with an argument that has no
signature (a traced value, a type the memo does not know) takes the op's full
path; so does every call of a signature whose recording showed something a
plan cannot repeat (a tensor made or read other than through the hook).
Frameworks without a ``signature`` hook never use the memo.
"""

from __future__ import annotations

import functools
import os
import types
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from ninetoothed.library.ops import decoding, kernels, split
from ninetoothed.library.ops._keys import SCALARS, Keyer, Keyers, form_of, keyer
from ninetoothed.library.ops._precision import Live
from ninetoothed.library.ops._recording import Recorder
from ninetoothed.library.ops.framework import Framework

__all__ = ["KNOB", "LIMIT", "SETTINGS", "Memo", "Planned", "enabled", "forget"]

SETTINGS: tuple[list[Any], ...] = (kernels._PINNED, split._PINNED_SPLITS, decoding._PINNED)
"""The module-level settings the ops' choices read besides their arguments (each a
one-element list); their values are part of every key."""

LIMIT = 4096
"""Signatures one op remembers; past it the memo starts afresh (a decoding loop
whose key/value cache grows makes a new signature per token)."""

KNOB = "NINETOOTHED_OP_MEMO"
"""Set to ``off`` (or ``0``, ``false``, ``no``) before a framework's ops module is imported
(``nt_torch.ops``: its memos are made then): every call takes the op's full path, as
before the memo (a way out should a plan misbehave)."""

Planned = Callable[[tuple[Any, ...], dict[str, Any], tuple[bool, ...], Any, Any], None]
"""``planned(args, kwargs, tensors, guard, plan)``: told of each plan made with a guard.
``tensors`` flags which values (positional, then keyword) are tensors; ``guard`` checks
that other tensors have this call's tensors' signatures; ``plan(framework, args,
kwargs)`` runs any call of the signature.  A framework may serve such calls itself
(``nt_torch``'s express lane): the memo's hot path decides nothing else for them."""

_MEMOS: weakref.WeakSet[Memo] = weakref.WeakSet()


class Memo:
    """``operation`` bound to ``framework``, with its decisions remembered per signature."""

    def __init__(self, operation: Callable[..., Any], framework: Framework) -> None:
        self._operation = operation
        self._framework = framework
        self._signature: Callable[[Any], Hashable | None] | None = getattr(
            framework, "signature", None
        )
        # Without signatures, every call is one the memo cannot key: as if traced; so
        # with the memo switched off.
        keyed = self._signature is not None and enabled()
        tracing = getattr(framework, "tracing", _never) if keyed else _always
        self._tracing: Callable[[], bool] = tracing
        self._reads: tuple[str, ...] | None = getattr(framework, "signature_reads", None)
        # Values keyed as they are: plain scalars, and the framework's dtypes (an op's
        # ``out_dtype``), which compare and hash by value.
        self._scalars = SCALARS + tuple(getattr(framework, "keyed_values", ()))
        self._guard: Callable[[list[Any]], Any] | None = getattr(framework, "signature_guard", None)
        # An op whose kernel follows the framework's float32 product setting keys on it.
        reads = getattr(operation, "reads_float32_products", False)
        self._settings: tuple[Any, ...] = (*SETTINGS, Live(framework)) if reads else SETTINGS
        self._plans: dict[Hashable, Any] = {}
        self._guards: dict[Hashable, Any] = {}
        """Per planned key, a check that other tensors have its tensors' signatures."""
        self._keyer: Keyer = _no_key
        """The key function of the most recent call's form (:mod:`._keys`)."""
        self._find: Callable[[tuple[Any, ...], dict[str, Any]], Any] = _no_key
        """Its twin finding the call's entry, the most recent hit first."""
        self._keyers: dict[Hashable, Keyers | None] = {}
        self.planned: Planned | None = None
        """Told of each plan made with a guard (:data:`Planned`); None: nobody asks."""
        self.forgotten: Callable[[], None] | None = None
        """Called when :func:`forget` drops the plans (what :attr:`planned` got is stale)."""
        _MEMOS.add(self)

    @property
    def framework(self) -> Framework:
        """The framework the op is bound to: a plan's first argument."""
        return self._framework

    @property
    def settings(self) -> tuple[Any, ...]:
        """What the op's choices read besides its arguments, each read as ``setting[0]``:
        a plan serves calls only while they hold the values they had when it was made."""
        return self._settings

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The op's result for ``args`` and ``kwargs``: by its plan when there is one.

        The hot path: one tracing check, the most recent form's find (the most
        recent hit's guard, else the key and one lookup), the plan.  Every entry
        of the dict is called the same way: a plan, or the memo's own step for a
        signature seen once (:meth:`_record`) or never planned (:meth:`_full`)."""
        if self._tracing():
            return self._operation(self._framework, *args, **kwargs)
        entry = self._find(args, kwargs)
        if entry is None:
            return self._unplanned(args, kwargs)
        return entry(self._framework, args, kwargs)

    def _unplanned(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call the most recent form's key finds no entry for: by its full key."""
        key = self._key(args, kwargs)
        if key is None:
            return self._operation(self._framework, *args, **kwargs)
        entry = self._plans.get(key)
        if entry is not None:
            return entry(self._framework, args, kwargs)
        result = self._operation(self._framework, *args, **kwargs)
        self._remember(key, functools.partial(self._record, key))
        return result

    def _record(
        self, key: Hashable, framework: Framework, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """A signature's second call: run on a recorder, keep the plan (or the full path)."""
        recorder = Recorder(framework, args, kwargs)
        result = self._operation(recorder, *args, **kwargs)
        plan = recorder.plan(result)
        self._plans[key] = plan or self._full
        if self._guard is not None:
            values = (*args, *kwargs.values())
            flags = tuple(self._signature(v) is not None for v in values)  # type: ignore[misc]
            try:
                guard = self._guards[key] = self._guard([v for v, t in zip(values, flags) if t])
            except Exception:  # noqa: BLE001 - tensors the guard cannot check: the key alone
                self._guards.pop(key, None)
            else:
                if self.planned is not None and type(plan) is types.FunctionType:
                    self.planned(args, kwargs, flags, guard, plan)
        return result

    def _full(self, framework: Framework, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A signature whose recording could not be repeated: the op in full."""
        return self._operation(framework, *args, **kwargs)

    def _remember(self, key: Hashable, value: Any) -> None:
        if len(self._plans) >= LIMIT:
            self._plans.clear()
            self._guards.clear()
        self._plans[key] = value

    def _key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable | None:
        """The call's signature, or None when an argument has none."""
        key = self._keyer(args, kwargs)
        return key if key is not None else self._other_form(args, kwargs)

    def _other_form(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable | None:
        """The key of a call whose form the most recent key function does not know: by
        its form's function (made on the form's first call), else argument by argument."""
        found: Keyers | None
        try:
            form = form_of(args, kwargs)
            if form in self._keyers:
                found = self._keyers[form]
            else:
                assert self._signature is not None
                tables = (self._plans, self._guards)
                found = keyer(
                    args, kwargs, self._signature, self._reads, tables, self._settings,
                    self._scalars,
                )  # fmt: skip
                if len(self._keyers) >= LIMIT:
                    self._keyers.clear()
                self._keyers[form] = found
        except Exception:  # a form the hook cannot read: argument by argument
            found = None
        if found is None:
            return self._parts_key(args, kwargs)
        self._keyer, self._find = found
        return found.key(args, kwargs) or self._parts_key(args, kwargs)

    def _parts_key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable | None:
        """The call's signature argument by argument, or None when an argument has none."""
        identities: list[int] = []
        try:
            parts = [self._part(value, identities) for value in args]
            if kwargs:
                parts += [(name, self._part(v, identities)) for name, v in kwargs.items()]
        except Exception:  # no signature, or one the hook cannot read: the full path
            return None
        # Which tensors are one and the same object (``add(x, x)``): a plan repeats
        # the recorded arguments by position.
        if len(set(identities)) != len(identities):
            parts.append(tuple(identities.index(i) for i in identities))
        parts.append(tuple([setting[0] for setting in self._settings]))
        return tuple(parts)

    def _part(self, value: Any, identities: list[int]) -> Hashable:
        signature = self._signature(value)  # type: ignore[misc]
        if signature is not None:  # a tensor, the usual argument: asked first
            identities.append(id(value))
            return signature
        kind = type(value)
        if kind in self._scalars:  # a float by its hex form: -0.0 is not 0.0, NaN equals itself
            return (kind, value.hex() if kind is float else value)
        if kind is tuple or kind is list:
            return (kind, tuple(self._part(item, identities) for item in value))
        raise _Unknown


class _Unknown(Exception):
    """An argument without a signature."""


def _never() -> bool:
    return False


def enabled() -> bool:
    """Whether the memo serves calls (:data:`KNOB`), read as an op's memo is made."""
    return os.environ.get(KNOB, "on").strip().lower() not in ("off", "0", "false", "no")


def _always() -> bool:
    return True


def _no_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The key function before a first call: no form known."""


def forget() -> None:
    """Drop every op's plans (for instance when the library's kernels are made afresh)."""
    for memo in list(_MEMOS):
        memo._plans.clear()
        memo._keyers.clear()
        memo._guards.clear()
        memo._keyer = memo._find = _no_key
        if memo.forgotten is not None:
            memo.forgotten()
