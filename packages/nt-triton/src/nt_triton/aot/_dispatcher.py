"""The text of ``build``'s dispatcher, and the table of what it launches.

:func:`dispatcher_source` writes ``launch_<kernel_name>``: per key, the
variants that serve different calls of it, tried in turn (each refuses a
call it was not compiled for with ``NINETOOTHED_ERROR_NO_VARIANT``), and a
refusal listing what was built where no key matches.  :func:`write_winners`
writes ``<kernel_name>.csv``.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ninetoothed.aot import CParameter
from nt_triton.aot import _sources
from nt_triton.aot._writer import c_string

__all__ = ["Group", "dispatcher_source", "write_winners"]


@dataclass
class Group:
    """Variants that serve the same calls: one key, the same fixed values."""

    key: tuple[int | None, ...]
    key_label: str
    """How messages name the key: ``size=1127, dtype=float16``."""
    serves: str
    """What it serves beyond the key (``causal=True, q.shape[3]=64``; "" for nothing)."""
    spec: Any
    """The kernel spec of its variants (their common parameters)."""
    sizes: dict[tuple[str, int], int]
    """Representative sizes ``(parameter, dim)`` of its calls (timing uses them)."""
    members: list[int] = field(default_factory=list)
    """Its compiled entries, by index."""
    labels: list[str] = field(default_factory=list)
    """How the CSV names each member (its tuned values)."""


def dispatcher_source(
    kernel_name: str,
    names: Sequence[str],
    parameters: Sequence[CParameter],
    groups: Sequence[Group],
    winners: Sequence[int],
    output_dir: Path,
) -> Path:
    """Write the dispatcher's header and translation unit; returns the unit."""
    function = f"launch_{kernel_name}"
    origin = f"ninetoothed.build of {kernel_name!r}"
    header = _sources.header(kernel_name, function, parameters, origin)
    (output_dir / f"{kernel_name}.h").write_text(header)
    keys = [p for p in parameters if p.kind == "key"]
    call = ", ".join(["stream", *(p.name for p in parameters if p.kind != "key")])
    lines = [f"static const char nt_kernel[] = {c_string(kernel_name)};"]
    declarations = ", ".join(
        ["NineToothedStream stream"]
        + [f"{'int' if p.kind == 'key' else 'NineToothedTensor'} {p.name}" for p in parameters]
    )
    lines.append(f"NineToothedResult {function}({declarations}) {{")
    by_key: dict[tuple[int | None, ...], list[tuple[Group, int]]] = {}
    for group, winner in zip(groups, winners):
        by_key.setdefault(group.key, []).append((group, winner))
    for key, members in by_key.items():
        condition = " && ".join(f"{p.name} == {v}" for p, v in zip(keys, key) if v is not None)
        lines += _key_branch(condition or "1", members, names, call, members[0][0].key_label)
    built = "; ".join(dict.fromkeys(group.key_label for group in groups))
    values = ", ".join(f"{p.name}=%d" for p in keys)
    message = c_string(f"%s: no variant was built for {values}; built: %s")
    arguments = "".join(f", {p.name}" for p in keys)
    lines.append(f"    static const char nt_built[] = {c_string(built)};")
    failure = f"nt_fail(NINETOOTHED_ERROR_NO_VARIANT, {message}, nt_kernel{arguments}, nt_built)"
    lines += [f"    return {failure};", "}"]
    includes = "\n".join(f'#include "{name}.h"' for name in dict.fromkeys(names))
    body = includes + "\n\n" + "\n".join(lines) + "\n"
    body += _sources.packed_entry(function, parameters)
    unit = _sources.translation_unit(f"{kernel_name}.h", 1, body, origin)
    path = output_dir / f"{kernel_name}.c"
    path.write_text(unit)
    return path


def _key_branch(
    condition: str,
    members: Sequence[tuple[Group, int]],
    names: Sequence[str],
    call: str,
    key: str,
) -> list[str]:
    """The dispatcher's lines for one key: its one variant, or its variants in turn."""
    if len(members) == 1:
        return [f"    if ({condition}) return launch_{names[members[0][1]]}({call});"]
    lines = [f"    if ({condition}) {{", "        NineToothedResult nt_status;"]
    for _, winner in members:
        lines.append(
            f"        if ((nt_status = launch_{names[winner]}({call})) != "
            "NINETOOTHED_ERROR_NO_VARIANT) return nt_status;"
        )
    served = "; ".join(group.serves for group, _ in members)
    message = c_string(
        f"%s: no variant of {key or 'the library'} serves the call: built for {served}"
    )
    lines += [
        f"        return nt_fail(NINETOOTHED_ERROR_NO_VARIANT, {message}, nt_kernel);",
        "    }",
    ]
    return lines


def write_winners(
    path: Path,
    key_names: Sequence[str],
    groups: Sequence[Group],
    winners: Sequence[int],
    times: Sequence[float | None],
) -> None:
    """``<kernel_name>.csv``: per group, the variant launched, its tuned values and time."""
    serves = any(group.serves for group in groups)
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        extra = ["serves"] if serves else []
        writer.writerow([*key_names, *extra, "launched", "milliseconds", "candidates"])
        for group, winner, time in zip(groups, winners, times):
            launched = group.labels[group.members.index(winner)]
            shown = "" if time is None else f"{time:.6f}"
            row = ["" if v is None else v for v in group.key]
            extra = [group.serves] if serves else []
            writer.writerow([*row, *extra, launched, shown, len(group.members)])
