"""``build``'s library: every variant, and one dispatcher that picks by key.

Each variant is a kernel of its own translation unit, ``<kernel_name>_<values>.c``
with its header and launch function (as ``make`` writes one).  The
dispatcher, ``launch_<kernel_name>`` in ``<kernel_name>.c``, takes the
variants' tensors, then the key values as ``int``, and calls a variant of
that key.  Variants of one key that serve different calls (other values of
a constexpr scalar the call gives, other padded sizes: their
:attr:`~ninetoothed.aot.BuildVariant.fixed`) are tried in turn: a variant
refuses a call it was not compiled for with ``NINETOOTHED_ERROR_NO_VARIANT``
before anything else.  Variants that serve the same calls compete: the
fastest on representative inputs, timed at build time on every visible GPU
(:mod:`._timing`; without a GPU, the first configuration), is compiled into
the dispatcher (an immutable table: nothing to lock) and written beside the
library, ``<kernel_name>.csv``.  A key no variant has is refused with a
message listing the keys built.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ninetoothed.aot import BuildVariant, CLibrary, CParameter
from nt_triton.aot import _cc, _compile, _library, _timing
from nt_triton.aot._dispatcher import Group, dispatcher_source, write_winners
from nt_triton.aot._variants import Fixed
from nt_triton.description import KernelDescription, describe_configurations, size_name

__all__ = ["OBJECTS", "build"]

OBJECTS = ".objects"
"""The directory, in ``output_dir``, of the compiled translation units."""


@dataclass(frozen=True)
class _Entry:
    """One variant with one configuration of its kernel's tuning space: one unit."""

    variant: BuildVariant
    description: KernelDescription
    configuration: int


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
    # Without a GPU to time them on, only a variant's first configuration is compiled.
    timed = _timing.device_count() > 0
    entries = [
        _Entry(variant, description, index)
        for variant in variants
        for index, description in enumerate(
            describe_configurations(variant.spec, variant.configurations if timed else 1)
        )
    ]
    names = _names(kernel_name, entries)
    labels = [f"{kernel_name} ({_label(entry)})" for entry in entries]
    fixed = [_fixed(entry.variant) for entry in entries]
    descriptions = [entry.description for entry in entries]
    kernels = _library.compile_kernels(descriptions, names, labels, target_, fixed)
    origin = f"ninetoothed.build of {kernel_name!r}"
    units = [_library.write_kernel(k, output_dir, target_, origin) for k in kernels]
    parameters = _library.parameters(variants[0].spec) + tuple(
        CParameter(name, "key") for name in key_names
    )
    groups = _groups(entries)
    library = output_dir / f"{kernel_name}.so"
    _library.copy_header(output_dir)
    # Objects stay beside the sources (reused while current: a library of libraries
    # links them again); the timing library gets a path of its own.
    objects_dir = output_dir / OBJECTS
    objects_dir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ninetoothed-tuning-") as directory:
        objects = _cc.objects(units, [output_dir], objects_dir)
        parts = _Parts(kernel_name, names, parameters, groups, output_dir, objects, objects_dir)
        winners, times = _winners(parts, entries, Path(directory))
        dispatcher = parts.link(winners, library)
    write_winners(output_dir / f"{kernel_name}.csv", key_names, groups, winners, times)
    return CLibrary(
        kernel_name=kernel_name,
        function=f"launch_{kernel_name}",
        parameters=parameters,
        library=library,
        header=output_dir / f"{kernel_name}.h",
        source=dispatcher,
        built=tuple(dict.fromkeys(v.key_label for v in variants)),
    )


def _label(entry: _Entry) -> str:
    """How messages name one entry: its variant, and its configuration if several."""
    configuration = _configuration(entry)
    return f"{entry.variant.label}; {configuration}" if configuration else entry.variant.label


def _configuration(entry: _Entry) -> str:
    """The entry's configuration of its kernel's tuning space, where several are timed."""
    if entry.variant.configurations <= 1:
        return ""
    description = entry.description
    meta = [f"{n}={v}" for n, v in sorted(description.meta.items())]
    meta += [f"num_warps={description.num_warps}", f"num_stages={description.num_stages}"]
    return ", ".join(meta + ([f"maxnreg={description.maxnreg}"] if description.maxnreg else []))


def _launched(entry: _Entry) -> str:
    """How the CSV names what an entry launches: its tuned values."""
    tuned = [f"{n}={v!r}" for n, v in entry.variant.meta]
    tuned += [_configuration(entry)] if _configuration(entry) else []
    return ", ".join(tuned) or entry.variant.label


def _fixed(variant: BuildVariant) -> Fixed:
    """What ``variant`` fixes of the calls it serves, as the compiler takes it."""
    sizes = {size_name(parameter, dim): size for parameter, dim, size in variant.sizes}
    return Fixed(dict(variant.constants), sizes)


def _groups(entries: Sequence[_Entry]) -> list[Group]:
    """The entries that serve the same calls (same key and fixed values), in order."""
    found: dict[tuple[object, ...], Group] = {}
    for index, entry in enumerate(entries):
        variant = entry.variant
        group = found.setdefault(
            (variant.key, variant.fixed),
            Group(
                variant.key,
                variant.key_label,
                _serves(variant),
                variant.spec,
                _timing_sizes(variant),
            ),
        )
        group.members.append(index)
        group.labels.append(_launched(entry))
    return list(found.values())


def _serves(variant: BuildVariant) -> str:
    """What a group serves beyond its key, as the CSV and messages say it."""
    constants = [f"{name}={value!r}" for name, value in variant.constants]
    sizes = [f"{parameter}.shape[{dim}]={size}" for parameter, dim, size in variant.sizes]
    return ", ".join(constants + sizes)


def _timing_sizes(variant: BuildVariant) -> dict[tuple[str, int], int]:
    return {(parameter, dim): size for parameter, dim, size in variant.sizes}


@dataclass(frozen=True)
class _Parts:
    """What linking a dispatcher over the compiled variants needs."""

    kernel_name: str
    names: Sequence[str]
    parameters: Sequence[CParameter]
    groups: Sequence[Group]
    output_dir: Path
    objects: Sequence[Path]
    directory: Path

    def link(self, winners: Sequence[int], library: Path) -> Path:
        """Write the dispatcher launching ``winners``, link ``library``; the dispatcher's path."""
        dispatcher = dispatcher_source(
            self.kernel_name, self.names, self.parameters, self.groups, winners, self.output_dir
        )
        (dispatcher_object,) = _cc.objects([dispatcher], [self.output_dir], self.directory)
        _cc.link([*self.objects, dispatcher_object], library)
        return dispatcher


def _winners(
    parts: _Parts, entries: Sequence[_Entry], directory: Path
) -> tuple[list[int], list[float | None]]:
    """Each group's entry to launch (timed on the GPUs when it has several), and its time."""
    winners = [group.members[0] for group in parts.groups]
    times: list[float | None] = [None] * len(winners)
    if all(len(group.members) == 1 for group in parts.groups):
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
    tuning = directory / f"{parts.kernel_name}.tuning.so"
    parts.link(winners, tuning)
    return _tune(tuning, parts, entries, devices)


def _names(kernel_name: str, entries: Sequence[_Entry]) -> list[str]:
    """Each entry's file stem: the kernel's name and its values, unique."""
    names: list[str] = []
    for index, entry in enumerate(entries):
        variant = entry.variant
        values = [*variant.key, *(_number(v) for _, v in variant.meta)]
        values += [_number(v) for _, v in variant.constants]
        values += [size for _, _, size in variant.sizes]
        suffix = "_".join("x" if v is None else (str(v) if v >= 0 else f"m{-v}") for v in values)
        suffix += f"_c{entry.configuration}" if entry.configuration else ""
        name = f"{kernel_name}_{suffix}" if suffix else f"{kernel_name}_{index}"
        names.append(name if name not in names else f"{name}_{index}")
    return names


def _number(value: object) -> int | None:
    from ninetoothed.aot import key_value

    try:
        return key_value(value)
    except TypeError:
        return None


def _tune(
    library: Path, parts: _Parts, entries: Sequence[_Entry], devices: int
) -> tuple[list[int], list[float | None]]:
    """The fastest entry of each group, and its time."""
    import ctypes

    handle = ctypes.CDLL(str(library))
    timing = [
        _timing.Group(
            group.spec,
            tuple(f"launch_{parts.names[i]}" for i in group.members),
            group.sizes,
            dict(entries[group.members[0]].variant.constants),
        )
        for group in parts.groups
    ]
    times = _timing.time_groups(handle, timing, devices)
    winners, best = [], []
    for group, measured in zip(parts.groups, times):
        fastest = min(range(len(group.members)), key=lambda i: measured[i])
        winners.append(group.members[fastest])
        best.append(measured[fastest] if measured[fastest] != float("inf") else None)
    return winners, best
