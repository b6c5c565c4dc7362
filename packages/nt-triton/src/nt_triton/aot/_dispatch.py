"""``build``'s library: every variant, and one dispatcher that picks by key.

Each variant is a kernel of its own translation unit, ``<kernel_name>_<values>.c``
with its header and launch function (as ``make`` writes one).  The
dispatcher, ``launch_<kernel_name>`` in ``<kernel_name>.c``, takes the
variants' tensors, then the key values as ``int``, and calls the variant of
that key: for keys with several variants (tuned values), the fastest on
representative inputs, timed at build time on every visible GPU
(:mod:`._timing`; without a GPU, the first configuration).  The winners are
compiled into the dispatcher (an immutable table: nothing to lock) and
written beside the library, ``<kernel_name>.csv``.  A key no variant has is
refused with a message listing the keys built.
"""

from __future__ import annotations

import csv
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ninetoothed.aot import BuildVariant, CLibrary, CParameter
from nt_triton.aot import _bridge, _cc, _compile, _library, _sources, _timing
from nt_triton.aot._launcher import c_string

__all__ = ["build"]


def build(
    variants: Sequence[BuildVariant],
    *,
    key_names: Sequence[str],
    kernel_name: str,
    output_dir: Path,
    target: str | None,
) -> CLibrary:
    """Compile, tune and link the library (see the module docstring)."""
    target_ = _compile.parse_target(target, "build")
    descriptions = [_bridge.describe(variant.spec) for variant in variants]
    names = _names(kernel_name, variants)
    labels = [f"{kernel_name} ({variant.label})" for variant in variants]
    kernels = _library.compile_kernels(descriptions, names, labels, target_)
    origin = f"ninetoothed.build of {kernel_name!r}"
    units = [_library.write_kernel(k, output_dir, target_, origin) for k in kernels]
    parameters = _library.parameters(variants[0].spec) + tuple(
        CParameter(name, "key") for name in key_names
    )
    library = output_dir / f"{kernel_name}.so"
    _library.copy_header(output_dir)
    with tempfile.TemporaryDirectory(prefix="ninetoothed-objects-") as directory:
        objects = _cc.objects(units, [output_dir], Path(directory))
        parts = _Parts(
            kernel_name,
            names,
            variants,
            parameters,
            _groups(variants),
            output_dir,
            objects,
            Path(directory),
        )
        winners, times = _winners(parts)
        dispatcher = parts.link(winners, library)
    _write_winners(
        output_dir / f"{kernel_name}.csv", key_names, parts.groups, winners, times, variants
    )
    return CLibrary(
        kernel_name=kernel_name,
        function=f"launch_{kernel_name}",
        parameters=parameters,
        library=library,
        header=output_dir / f"{kernel_name}.h",
        source=dispatcher,
        built=tuple(dict.fromkeys(v.key_label for v in variants)),
    )


@dataclass(frozen=True)
class _Parts:
    """What linking a dispatcher over the compiled variants needs."""

    kernel_name: str
    names: Sequence[str]
    variants: Sequence[BuildVariant]
    parameters: Sequence[CParameter]
    groups: dict[tuple[int | None, ...], list[int]]
    output_dir: Path
    objects: Sequence[Path]
    directory: Path

    def link(self, winners: Sequence[int], library: Path) -> Path:
        """Write the dispatcher launching ``winners``, link ``library``; the dispatcher's path."""
        dispatcher = _dispatcher(
            self.kernel_name,
            self.names,
            self.variants,
            self.parameters,
            self.groups,
            winners,
            self.output_dir,
        )
        (dispatcher_object,) = _cc.objects([dispatcher], [self.output_dir], self.directory)
        _cc.link([*self.objects, dispatcher_object], library)
        return dispatcher


def _winners(parts: _Parts) -> tuple[list[int], list[float | None]]:
    """Each key's variant to launch (timed on the GPUs when there are several), and its time."""
    winners = [members[0] for members in parts.groups.values()]
    times: list[float | None] = [None] * len(winners)
    if all(len(members) == 1 for members in parts.groups.values()):
        return winners, times
    devices = _timing.device_count()
    if not devices:
        warnings.warn(
            f"build {parts.kernel_name!r}: no GPU here to tune on; each key takes its first "
            "configuration",
            stacklevel=4,
        )
        return winners, times
    # Timed from a library of its own: a process holds one library per path.
    tuning = parts.directory / f"{parts.kernel_name}.tuning.so"
    parts.link(winners, tuning)
    return _tune(tuning, parts.variants, parts.names, parts.groups, devices)


def _names(kernel_name: str, variants: Sequence[BuildVariant]) -> list[str]:
    """Each variant's file stem: the kernel's name and its values, unique."""
    names: list[str] = []
    for index, variant in enumerate(variants):
        values = [*variant.key, *(_number(v) for _, v in variant.meta)]
        suffix = "_".join("x" if v is None else (str(v) if v >= 0 else f"m{-v}") for v in values)
        name = f"{kernel_name}_{suffix}" if suffix else f"{kernel_name}_{index}"
        names.append(name if name not in names else f"{name}_{index}")
    return names


def _number(value: object) -> int | None:
    from ninetoothed.aot import key_value

    try:
        return key_value(value)
    except TypeError:
        return None


def _groups(variants: Sequence[BuildVariant]) -> dict[tuple[int | None, ...], list[int]]:
    """The variants of each key, in order."""
    groups: dict[tuple[int | None, ...], list[int]] = {}
    for index, variant in enumerate(variants):
        groups.setdefault(variant.key, []).append(index)
    return groups


def _tune(
    library: Path,
    variants: Sequence[BuildVariant],
    names: Sequence[str],
    groups: dict[tuple[int | None, ...], list[int]],
    devices: int,
) -> tuple[list[int], list[float | None]]:
    """The fastest variant of each key, and its time."""
    import ctypes

    handle = ctypes.CDLL(str(library))
    members = list(groups.values())
    timing = [
        _timing.Group(variants[m[0]].spec, tuple(f"launch_{names[i]}" for i in m)) for m in members
    ]
    times = _timing.time_groups(handle, timing, devices)
    winners, best = [], []
    for group, measured in zip(members, times):
        fastest = min(range(len(group)), key=lambda i: measured[i])
        winners.append(group[fastest])
        best.append(measured[fastest] if measured[fastest] != float("inf") else None)
    return winners, best


def _dispatcher(
    kernel_name: str,
    names: Sequence[str],
    variants: Sequence[BuildVariant],
    parameters: Sequence[CParameter],
    groups: dict[tuple[int | None, ...], list[int]],
    winners: Sequence[int],
    output_dir: Path,
) -> Path:
    """Write the dispatcher's header and translation unit; returns the unit."""
    function = f"launch_{kernel_name}"
    origin = f"ninetoothed.build of {kernel_name!r}"
    header = _sources.header(kernel_name, function, parameters, origin)
    (output_dir / f"{kernel_name}.h").write_text(header)
    keys = [p for p in parameters if p.kind == "key"]
    tensors = [p.name for p in parameters if p.kind != "key"]
    lines = [f"static const char nt_kernel[] = {c_string(kernel_name)};"]
    built = "; ".join(dict.fromkeys(v.key_label for v in variants))
    lines.append(f"static const char nt_built[] = {c_string(built)};")
    declarations = ", ".join(
        ["NineToothedStream stream"]
        + [f"{'int' if p.kind == 'key' else 'NineToothedTensor'} {p.name}" for p in parameters]
    )
    lines.append(f"NineToothedResult {function}({declarations}) {{")
    call = ", ".join(["stream", *tensors])
    for key, winner in zip(groups, winners):
        condition = " && ".join(f"{p.name} == {v}" for p, v in zip(keys, key) if v is not None)
        lines.append(f"    if ({condition or '1'}) return launch_{names[winner]}({call});")
    values = ", ".join(f"{p.name}=%d" for p in keys)
    message = c_string(f"%s: no variant was built for {values}; built: %s")
    arguments = "".join(f", {p.name}" for p in keys)
    failure = f"nt_fail(NINETOOTHED_ERROR_NO_VARIANT, {message}, nt_kernel{arguments}, nt_built)"
    lines.append(f"    return {failure};")
    lines.append("}")
    includes = "\n".join(f'#include "{name}.h"' for name in dict.fromkeys(names))
    body = includes + "\n\n" + "\n".join(lines) + "\n"
    unit = _sources.translation_unit(f"{kernel_name}.h", 1, body, origin)
    path = output_dir / f"{kernel_name}.c"
    path.write_text(unit)
    return path


def _write_winners(
    path: Path,
    key_names: Sequence[str],
    groups: dict[tuple[int | None, ...], list[int]],
    winners: Sequence[int],
    times: Sequence[float | None],
    variants: Sequence[BuildVariant],
) -> None:
    """``<kernel_name>.csv``: per key, the variant launched, its tuned values and time."""
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow([*key_names, "launched", "milliseconds", "candidates"])
        for key, winner, time in zip(groups, winners, times):
            variant = variants[winner]
            launched = ", ".join(f"{n}={v!r}" for n, v in variant.meta) or variant.label
            shown = "" if time is None else f"{time:.6f}"
            row = ["" if v is None else v for v in key]
            writer.writerow([*row, launched, shown, len(groups[key])])
