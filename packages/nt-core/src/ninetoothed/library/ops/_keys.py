"""The memo's key of a call, from a function generated per *form* of call.

A form is the type of each positional argument and of each keyword
argument, by name, in order.  Calls of one op nearly always share a form
(the same tensors and flags, other shapes), so the memo keeps the most
recent form's function and tries it first: it unpacks the arguments, checks
each one's exact type and builds the key from straight reads, with no loop
and no call per argument.  A tensor is read through the framework's
``signature_reads`` when it has them (expressions of one tensor, ``{}``
standing for it, written inline), else by a call of its ``signature`` hook.
Which tensors are one and the same object is part of the key, as is every
setting the ops' choices read, and the form itself (a token of its own: a
key of one form never equals a key of another).

Forms with an argument that is neither a tensor nor a plain scalar
(``bool``, ``int``, ``str``, ``None``, ``float``) get no function: the memo
keys them argument by argument.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

from ninetoothed.runtime.syntax_trees import LOCK

__all__ = ["Keyer", "Keyers", "SCALARS", "form_of", "keyer"]

Keyer = Callable[[tuple[Any, ...], dict[str, Any]], Hashable | None]
"""``keyer(args, kwargs)``: the call's key, or None for a call of another form."""

SCALARS = (bool, int, str, type(None), float)
"""Argument types a generated key reads by value (a float by its hex form)."""


def form_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable:
    """The call's form: its positional types, then its keywords' names and types."""
    return (tuple(map(type, args)), tuple((name, type(v)) for name, v in kwargs.items()))


class Keyers(NamedTuple):
    """A form's two generated functions."""

    key: Keyer
    """``key(args, kwargs)``: the call's key, or None for a call of another form."""
    find: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    """``find(args, kwargs)``: the memo's entry for the call (None: none, or another
    form), the most recent hit first when its guard passes."""


def keyer(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    signature: Callable[[Any], Hashable | None],
    reads: Sequence[str] | None,
    tables: tuple[dict[Hashable, Any], dict[Hashable, Any]],
    settings: Sequence[Any],
    scalars: tuple[type, ...] = SCALARS,
) -> Keyers | None:
    """The key and find functions of this call's form, or None when the form has an
    argument that is neither a tensor (``signature`` is not None) nor of a type keyed by
    value (``scalars``: plain scalars, and the framework's dtypes).
    ``tables``: the memo's entries and their guards, by key."""
    values = [*args, *kwargs.values()]
    names = [f"a{i}" for i in range(len(args))] + [f"k{i}" for i in range(len(kwargs))]
    tensors = [signature(value) is not None for value in values]
    if not all(t or type(v) in scalars for t, v in zip(tensors, values)):
        return None
    namespace: dict[str, Any] = {
        "signature": signature, "form": object(), "plans": tables[0], "guards": tables[1],
        "mru": [(_never, None, None)],
    }  # fmt: skip
    checks, parts, others, signatures = _reads(names, values, tensors, reads, namespace)
    tensor_names = [n for n, t in zip(names, tensors) if t]
    others += [f"{a} is {b}" for i, a in enumerate(tensor_names) for b in tensor_names[i + 1 :]]
    for index, setting in enumerate(settings):
        namespace[f"S{index}"] = setting
        others.append(f"S{index}[0]")
    head = [f"{', '.join(names[: len(args)])}, = args"] if args else []
    head += [f"k{i} = kwargs[{name!r}]" for i, name in enumerate(kwargs)]
    head += [f"if {' or '.join(checks) or 'False'}:", "    return None"]
    head.append(f"rest = ({''.join(f'{o}, ' for o in others)})")
    keying = [*signatures, f"key = ({', '.join(parts)}, rest)"]
    recent = [  # the most recent hit: its guard implies the tensors' part of the key
        "last = mru[0]",
        f"if rest == last[1] and last[0]({', '.join(tensor_names)}):",
        "    return last[2]",
    ]
    source = "\n".join(
        [
            _function("key", len(args), len(kwargs), [*head, *keying, "return key"]),
            _function(
                "find", len(args), len(kwargs),
                [*head, *(recent if tensor_names else []), *keying, "entry = plans[key]"],
                ["guard = guards.get(key)", "if guard is not None:",
                 "    mru[0] = (guard, rest, entry)", "return entry"],
            ),
        ]
    )  # fmt: skip
    with LOCK:  # CPython's compiler is not safe to run from several threads at once
        exec(compile(source, "<ninetoothed op key>", "exec"), namespace)  # noqa: S102
    return Keyers(namespace["key"], namespace["find"])


def _reads(
    names: list[str],
    values: list[Any],
    tensors: list[bool],
    reads: Sequence[str] | None,
    namespace: dict[str, Any],
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Per argument, its type check and its part of the key: ``(checks, tensor parts,
    other parts, signature lines)``; the types go into ``namespace`` as ``T<i>``."""
    checks, parts, others, signatures = [], ["form"], [], []
    for index, (name, value, tensor) in enumerate(zip(names, values, tensors)):
        namespace[f"T{index}"] = type(value)
        checks.append(f"type({name}) is not T{index}")
        if not tensor:
            others.append(f"{name}.hex()" if type(value) is float else name)
        elif reads is not None:
            parts += [read.format(name) for read in reads]
        else:  # a None (a value the hook does not know) would key nothing: no key
            signatures += [f"s{index} = signature({name})", f"if s{index} is None:"]
            signatures.append("    return None")
            parts.append(f"s{index}")
    return checks, parts, others, signatures


def _function(
    name: str, count: int, keywords: int, body: list[str], after: Sequence[str] = ()
) -> str:
    """``name(args, kwargs)``: ``body`` in a ``try`` (any exception: None), then ``after``."""
    lines = [
        f"def {name}(args, kwargs):",
        f"    if len(args) != {count} or len(kwargs) != {keywords}:",
        "        return None",
        "    try:",
        *(f"        {line}" for line in body),
        "    except Exception:  # a read the tensor refuses, or no entry: None",
        "        return None",
        *(f"    {line}" for line in after),
    ]
    return "\n".join(lines) + "\n"


def _never(*tensors: Any) -> bool:
    return False
