"""A generated kernel described for compilers outside the JIT path: nt-triton's public
kernel description.

The ahead-of-time builder (:mod:`nt_triton.aot`) compiles kernels into C
libraries from this module only: everything it needs of a generated kernel
comes through :func:`describe` as one :class:`KernelDescription` (the kernel's
typed signature -- :class:`KernelSignature` of :class:`KernelParameter` s of a
:class:`ParameterKind` --, its grid, its launch checks (:class:`ShapeCheck`,
:class:`SizeRequirement`), the tiles its size alignments are compared with,
the configuration it is compiled with and where its Triton source lies), and
compiling for a target goes through :func:`specialisation`, :func:`compile_job`
and :func:`compile_from_job` (:func:`serve` answers jobs in a worker process).
:func:`size_name`, :func:`stride_name`, :data:`INDEX_LIMIT` and
:data:`INT32_LIMIT` are the names and limits the generated host code uses.
When nt-triton's internals move, this module changes and its users do not.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninetoothed.arrangement.symbol import Symbol, SymbolLike, evaluate
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _codegen as codegen
from nt_triton import _space_bounds as space_bounds
from nt_triton import _tuning as tuning
from nt_triton import knobs
from nt_triton._abi import KernelParameter, KernelSignature, ParameterKind
from nt_triton._codegen import naming
from nt_triton._codegen import persistent_loop as persistence
from nt_triton._codegen.product import ShapeCheck, SizeRequirement
from nt_triton._host import INDEX_LIMIT, INT32_LIMIT, broadcast_dims
from nt_triton._launch.compiled import Specialisation, triton_version
from nt_triton._launch.tuning_calls import itemsize
from nt_triton.cache import _sources as cache
from nt_triton.tuner import _worker as worker

__all__ = [
    "INDEX_LIMIT",
    "INT32_LIMIT",
    "KernelDescription",
    "KernelParameter",
    "KernelSignature",
    "ParameterKind",
    "ShapeCheck",
    "SizeRequirement",
    "Specialisation",
    "compile_from_job",
    "compile_job",
    "describe",
    "describe_configurations",
    "serve",
    "size_name",
    "specialisation",
    "stride_name",
]

size_name = naming.size
"""The name host code and kernels give tensor ``parameter``'s size along ``dim``."""

stride_name = naming.stride
"""The name host code and kernels give tensor ``parameter``'s stride along ``dim``."""


@dataclass(frozen=True)
class KernelDescription:
    """What compiling a kernel ahead of time needs to know of it."""

    spec: KernelSpec
    function_name: str
    """The ``@triton.jit`` function's name in :attr:`source_path`."""
    source_path: Path
    """The Triton module (compile workers import it)."""
    injected: Mapping[str, Any]
    """Objects the module refers to (users' ``triton.jit`` helpers): compiled in process."""
    function: Callable[[], Any]
    """The ``@triton.jit`` function, loaded on demand (in-process compiles)."""
    signature: KernelSignature
    grid: tuple[SymbolLike, ...]
    """Per grid dimension, its size in terms of size, stride and meta names."""
    shape_checks: tuple[ShapeCheck, ...]
    broadcasts: tuple[tuple[int | None, ...] | None, ...]
    """Per shape check, the source dimension each outermost dimension walks (None for
    none): a broadcast view there, stride 0 at the call, may be longer than the grid."""
    requirements: tuple[SizeRequirement, ...]
    outputs: tuple[str, ...]
    persistent: bool
    """One program per multiprocessor, each looping over the grid."""
    meta: Mapping[str, int]
    """The meta values compiled in (tuned symbols and the padded sizes they imply)."""
    num_warps: int
    num_stages: int
    maxnreg: int | None
    alignment_tiles: Mapping[str, tuple[int, ...]]
    """Per size-alignment parameter, the tile sizes the kernel compares it with."""


def describe(spec: KernelSpec, meta: Mapping[str, int] | None = None) -> KernelDescription:
    """Generate ``spec``'s kernel and describe it, compiled with ``meta`` (the meta
    values, else the first configuration of its tuning space)."""
    if meta is None:  # the first configuration, as under Triton's interpreter
        return describe_configurations(spec, 1)[0]
    generated = codegen.generate(spec)
    num_warps, num_stages = tuning.launch_options(spec.options)
    first = _configurations(spec, generated)[0]
    return _described(spec, generated, dict(meta), num_warps, num_stages, first.maxnreg)


def describe_configurations(spec: KernelSpec, count: int) -> list[KernelDescription]:
    """``spec``'s kernel described with each of the first ``count`` configurations of its
    tuning space (fewer where the space is smaller), those that fit its tensors' dtypes
    first: the candidates build-time tuning times."""
    generated = codegen.generate(spec)
    space = _fitting_first(spec, generated, _configurations(spec, generated))
    return [
        _described(spec, generated, dict(c.values), c.num_warps, c.num_stages, c.maxnreg)
        for c in space[: max(1, count)]
    ]


def _fitting_first(spec: KernelSpec, generated: Any, space: list[Any]) -> list[Any]:
    """``space`` with the configurations that fit the tensors' declared dtypes first (each
    part in its order).  A space is sized for 2-byte elements: a build for float32 tensors
    takes its first configuration (no GPU to time on) or times its first few, and mm's
    first (64 x 256 x 64 tiles, 3 stages) needs more shared memory for float32 tiles than
    an H100 has.  Sizes other than the meta symbols count at their bounds."""
    sizes = [itemsize(c.dtype) for c in spec.call_checks if not c.is_scalar and c.dtype]
    element_bytes = max(sizes, default=tuning.ASSUMED_ELEMENT_BYTES)
    if element_bytes <= tuning.ASSUMED_ELEMENT_BYTES:
        return space
    sizing = tuning.Sizing(generated.signature, generated.footprint, "tl.dot(" in generated.source)
    return space_bounds.fitting_first(space, sizing, {}, element_bytes)


def _configurations(spec: KernelSpec, generated: Any) -> list[Any]:
    """The kernel's tuning space, in nt-triton's order."""
    uses_dot = "tl.dot(" in generated.source
    return list(tuning.configurations(spec, generated.footprint, generated.signature, uses_dot))


def _described(
    spec: KernelSpec,
    generated: Any,
    values: dict[str, int],
    num_warps: int,
    num_stages: int,
    maxnreg: int | None,
) -> KernelDescription:
    """The description of ``generated`` compiled with meta ``values`` and these options."""
    signature = generated.signature
    values.update(tuning.derived_meta_values(signature, values))
    path = cache.store(generated.source, generated.kernel_name)
    injected = dict(generated.injected)
    return KernelDescription(
        spec=spec,
        function_name=generated.kernel_name,
        source_path=path,
        injected=injected,
        function=lambda: getattr(cache.load(path, injected), generated.kernel_name),
        signature=signature,
        grid=tuple(generated.grid),
        shape_checks=tuple(generated.shape_checks),
        broadcasts=tuple(broadcast_dims(spec, check) for check in generated.shape_checks),
        requirements=tuple(generated.requirements),
        outputs=tuple(generated.outputs),
        persistent=persistence.requested(spec),
        meta=values,
        num_warps=num_warps,
        num_stages=num_stages,
        maxnreg=maxnreg,
        alignment_tiles=_alignment_tiles(generated.source, signature, values),
    )


def _alignment_tiles(
    source: str, signature: KernelSignature, values: Mapping[str, int]
) -> dict[str, tuple[int, ...]]:
    """The tiles each size alignment is compared with (``aligned % tile == 0``, as
    ``nt_triton._codegen.divisibility`` writes it), evaluated with ``values``."""
    names = {p.name for p in signature.of_kind(ParameterKind.SIZE_ALIGNMENT)}
    found: dict[str, set[int]] = {name: set() for name in names}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Name)
            and node.left.id in names
        ):
            try:
                tile = evaluate(Symbol(node.right), values)
            except Exception:  # noqa: BLE001 - a tile of other names: left out (masks stay)
                continue
            found[node.left.id].add(int(tile))
    return {name: tuple(sorted(tiles)) for name, tiles in found.items()}


def specialisation(
    parameters: Sequence[tuple[str, str]], constexprs: Mapping[str, Any], divisible: set[int]
) -> Specialisation:
    """Triton's specialisation of a kernel: each parameter's type (``"constexpr"`` for
    those in ``constexprs``), and the indices of those divisible by 16 (pointers
    aligned to 16 bytes), spelled as this Triton spells it."""
    constexpr_attrs = triton_version() >= (3, 9)
    attrs: list[tuple[int, bool | None]] = []
    for index, (_, kind) in enumerate(parameters):
        if kind == "constexpr":
            if constexpr_attrs:
                attrs.append((index, None))
        elif kind[0] == "*" or kind[0] in "iu":
            attrs.append((index, index in divisible))
    return Specialisation(
        tuple(parameters),
        tuple((name, constexprs[name]) for name, _ in parameters if name in constexprs),
        tuple(attrs),
    )


def compile_job(
    description: KernelDescription, specialisation: Specialisation, target: tuple[str, int, int]
) -> dict[str, Any]:
    """One compile as data, for a worker process (``python -m nt_triton.aot._worker``)."""
    return {
        "path": str(description.source_path),
        "name": description.function_name,
        "signature": [list(item) for item in specialisation.signature],
        "constexprs": [list(item) for item in specialisation.constexprs],
        "attrs": [list(item) for item in specialisation.attrs],
        "target": list(target),
        "num_warps": description.num_warps,
        "num_stages": description.num_stages,
        "maxnreg": description.maxnreg,
    }


def compile_from_job(job: Mapping[str, Any], function: Any = None) -> Any:
    """The ``CompiledKernel`` of a :func:`compile_job` (``function``: the loaded kernel,
    else its module is imported from the job's path)."""
    with warnings.catch_warnings():  # Triton 3.9 warns about an unset fp-fusion default
        warnings.simplefilter("ignore")
        if not knobs.interpreting():
            return worker.compiled(dict(job), function)
        return _compile_interpreted(function, job)


def _compile_interpreted(function: Any, job: Mapping[str, Any]) -> Any:
    """Compile in a process that runs Triton's interpreter: a compilable copy of the
    kernel, with Triton's language as imported and the interpreter off meanwhile."""
    import triton
    import triton.compiler.code_generator  # noqa: F401  (imported while interpreting)

    from nt_triton import _gpu_check as gpu_check

    if function is None:
        function = getattr(cache.load(Path(job["path"]), {}), job["name"])
    with triton.knobs.runtime.scope(), gpu_check._pristine_language():
        triton.knobs.runtime.interpret = False
        return worker.compiled(dict(job), gpu_check._compilable(function, gpu_check._MADE))


serve = worker.serve
"""Answer compile jobs read from stdin until it closes (a worker process's loop)."""
