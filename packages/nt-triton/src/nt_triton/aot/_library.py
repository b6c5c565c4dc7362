"""One kernel's part of a library: compiled specialisations, header, translation unit.

:func:`compile_kernels` compiles every specialisation of every kernel at once
(one pool of workers for the lot); :func:`write_kernel` writes a kernel's
header and translation unit; :func:`finish` compiles the units and links
the library.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ninetoothed.aot import HEADER_PATH, CParameter
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton.aot import _cc, _compile, _sources, _variants
from nt_triton.aot._launcher import launcher_source
from nt_triton.aot._writer import Compiled, c_names
from nt_triton.description import KernelDescription, compile_job

__all__ = ["Kernel", "compile_kernels", "copy_header", "finish", "parameters", "write_kernel"]


@dataclass(frozen=True)
class Kernel:
    """A kernel of the library: its description, compiled specialisations and C names."""

    description: KernelDescription
    compiled: tuple[Compiled, ...]
    name: str
    """Its files' stem and launch function's suffix (``launch_<name>``)."""
    label: str
    """How its messages name it."""
    fixed: _variants.Fixed
    """What the library fixes of the calls it serves (values of constexprs the call gives)."""


def parameters(spec: KernelSpec) -> tuple[CParameter, ...]:
    """The launch function's parameters after the stream, described."""
    result = []
    for parameter, name in zip(spec.parameters, c_names(spec)):
        source = parameter.source
        dtype = source.dtype.name if source.dtype is not None else ""
        if not parameter.is_scalar:
            result.append(CParameter(name, "tensor", ndim=source.ndim, dtype=dtype))
        elif source.constexpr and source.value is not None:
            result.append(CParameter(name, "constant"))
        else:
            ctype = _variants.scalar_types(source.dtype)[1]
            result.append(CParameter(name, "scalar", ctype=ctype, dtype=dtype or "float32"))
    return tuple(result)


def compile_kernels(
    descriptions: Sequence[KernelDescription],
    names: Sequence[str],
    labels: Sequence[str],
    target: _compile.Target,
    fixed: Sequence[_variants.Fixed] | None = None,
) -> list[Kernel]:
    """Every specialisation of every kernel, compiled in one go (``fixed``: per kernel,
    what it fixes of the calls it serves)."""
    jobs, in_process, job_labels, owners = [], [], [], []
    fixed = list(fixed) if fixed is not None else [_variants.Fixed() for _ in descriptions]
    plans = [_variants.plans(d, f) for d, f in zip(descriptions, fixed)]
    for index, (description, kernel_plans) in enumerate(zip(descriptions, plans)):
        function = description.function() if description.injected else None
        for plan in kernel_plans:
            jobs.append(compile_job(description, plan.specialisation, target))
            in_process.append(function)
            job_labels.append(f"{labels[index]} [{plan.describe()}]")
            owners.append(index)
    binaries = _compile.compile_all(jobs, in_process, job_labels, target)
    kernels = []
    for index, (description, kernel_plans) in enumerate(zip(descriptions, plans)):
        mine = [binary for binary, owner in zip(binaries, owners) if owner == index]
        compiled = tuple(Compiled(plan, binary) for plan, binary in zip(kernel_plans, mine))
        kernels.append(Kernel(description, compiled, names[index], labels[index], fixed[index]))
    return kernels


def write_kernel(kernel: Kernel, output_dir: Path, target: _compile.Target, origin: str) -> Path:
    """Write ``kernel``'s header and translation unit; returns the unit's path."""
    spec = kernel.description.spec
    function = f"launch_{kernel.name}"
    described = parameters(spec)
    header = _sources.header(kernel.name, function, described, origin)
    (output_dir / f"{kernel.name}.h").write_text(header)
    body = launcher_source(
        kernel.description,
        kernel.compiled,
        function=function,
        label=kernel.label,
        target=_compile.target_name(target),
        given=_variants.compiled_in(kernel.description, kernel.fixed),
    )
    body += _sources.packed_entry(function, described)
    unit = _sources.translation_unit(f"{kernel.name}.h", len(kernel.compiled), body, origin)
    path = output_dir / f"{kernel.name}.c"
    path.write_text(unit)
    return path


def copy_header(output_dir: Path) -> None:
    """Put ``ninetoothed.h`` beside the generated headers (they include it)."""
    shutil.copyfile(HEADER_PATH, output_dir / HEADER_PATH.name)


def finish(output_dir: Path, units: Sequence[Path], library: Path) -> None:
    """Copy ``ninetoothed.h`` beside the units, compile them and link ``library``."""
    copy_header(output_dir)
    with tempfile.TemporaryDirectory(prefix="ninetoothed-objects-") as directory:
        objects = _cc.objects(units, [output_dir], Path(directory))
        _cc.link(objects, library)
