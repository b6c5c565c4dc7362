"""Assembly: the rewritten application becomes a Triton module and its product.

:func:`generate` runs the stages in order — parse and inline the application
(:mod:`inline`), rewrite it (:mod:`application`, which resolves addresses,
geometry and references as it goes) — and then assembles what they
collected: the prologue (the program's grid indices, the aranges, 64-bit
widening of strides), the kernel's typed signature (:mod:`nt_triton._abi`),
the launch-time checks, and the module text.  The result is one immutable
:class:`~nt_triton._codegen.product.GeneratedSource`.
"""

from __future__ import annotations

import ast

from ninetoothed.arrangement.names import renamed
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton._abi import KernelParameter, KernelSignature, ParameterKind
from nt_triton._codegen import inline, naming, ordering, persistent_loop, unselected
from nt_triton._codegen.application import ApplicationRewriter
from nt_triton._codegen.context import Context, names_in
from nt_triton._codegen.product import (
    GeneratedSource,
    ShapeCheck,
    SizeRequirement,
    TileFootprint,
)

__all__ = ["generate"]


def generate(spec: KernelSpec) -> GeneratedSource:
    """Generate the Triton kernel for ``spec``: source, signature, grid, checks, footprint."""
    context = Context(spec)
    definition = inline.parse_function(spec.application)
    definition = inline.Inliner(inline.local_names(definition)).visit(definition)
    context.unselected = unselected.element_wise_stores(context, definition.body)
    rewriter = ApplicationRewriter(context, inline.local_names(definition))
    body = rewriter.rewrite_body(definition.body) or [ast.Pass()]
    prologue, body = _prologue(context, body)  # before the signature: it may use sizes
    signature = _signature(context)
    shape_checks, requirements = _launch_checks(context)
    tensors = spec.tensor_parameters
    return GeneratedSource(
        name=spec.name,
        kernel_name=naming.kernel(spec.name),
        source=_module_text(context, signature, _widening(signature) + prologue, body),
        signature=signature,
        grid=context.grid,
        shape_checks=shape_checks,
        requirements=requirements,
        footprint=TileFootprint(
            tuple(context.tiles),
            tuple(shape for shape, _ in context.loop_tiles),
            context.has_loop,
            context.phases(),
            context.loop_groups(),
        ),
        inputs=tuple(p.name for p in tensors if p.name in context.loaded),
        outputs=tuple(p.name for p in tensors if p.name in context.stored),
        injected=dict(context.injected),
    )


def _prologue(context: Context, body: list[ast.stmt]) -> tuple[list[str], list[ast.stmt]]:
    """The program's grid indices (from ``tl.program_id(0)``; row-major, or grouped
    for product-like kernels: :mod:`~nt_triton._codegen.ordering`) and the aranges,
    with the body; persistent kernels compute the indices in a loop around the
    body (:mod:`~nt_triton._codegen.persistent_loop`)."""
    per_program: list[str] = []
    grid = context.grid
    if grid and any(not _is_one(g) for g in grid):
        per_program.append(f"{naming.PROGRAM_ID} = tl.program_id(0)")
        # Grid index * tile size + arange exceeds int32 for dimensions (or flattened
        # indices) of 2^31 elements: under the 64-bit flag, indices start 64-bit.
        per_program.append(f"if {naming.INT64_FLAG}:")
        per_program.append(f"    {naming.PROGRAM_ID} = tl.cast({naming.PROGRAM_ID}, tl.int64)")
        per_program += _grid_indices(context, body)
    aranges = list(context.aranges.values())
    if per_program and persistent_loop.requested(context.spec):
        persistent_loop.check_application(context, body)
        count = persistent_loop.program_count(context, grid)
        counting, body = persistent_loop.wrap(count, per_program, body)
        return counting + aranges + context.descriptor_lines, body
    return per_program + aranges, body


def _grid_indices(context: Context, body: list[ast.stmt]) -> list[str]:
    """Statements giving each grid dimension of more than one program its index.

    Row-major; when :func:`ordering.grouped_dims` picks the last two dimensions
    of more than one program, those two are walked in groups and the ones
    before them stay row-major around the pair.
    """
    grid = context.grid
    grouped = ordering.grouped_dims(grid, context.grid_dims_read, body)
    program_id = Symbol(naming.PROGRAM_ID)
    statements: list[str] = []
    inner: SymbolLike = 1
    if grouped is not None:
        rows, columns = (grid[dim] for dim in grouped)
        outer = any(not _is_one(g) for g in grid[: grouped[0]])
        statements += ordering.grouped_decomposition(program_id, rows, columns, outer)
        statements += ordering.grouped_indices(*grouped)
        context.used_names |= names_in(rows) | names_in(columns)
        inner = rows * columns
    decomposition: list[str] = []
    for dim in range(len(grid) - 1, -1, -1):
        size = grid[dim]
        if _is_one(size) or (grouped is not None and dim in grouped):
            continue
        index: SymbolLike = program_id // inner
        if dim > 0 and any(not _is_one(g) for g in grid[:dim]):
            index = index % size
        decomposition.append(f"{naming.grid_index(dim)} = {index}")
        context.used_names |= names_in(index)
        inner = inner * size
    return statements + decomposition[::-1]


def _signature(context: Context) -> KernelSignature:
    """The kernel's parameters, in order (see :mod:`nt_triton._abi`).

    Pointers; the sizes and strides the code uses; scalars; run-time then
    constexpr symbols (sorted); host-padded sizes; the 64-bit flag; layout flags;
    descriptor flags; size alignments; then what tuning supplies: meta symbols (sorted) and the
    padded sizes derived from them.
    """
    spec = context.spec
    used = context.used_names
    tensors = spec.tensor_parameters
    kind = ParameterKind
    parameters = [
        KernelParameter(naming.pointer(p.name), kind.POINTER, False, tensor_index=index)
        for index, p in enumerate(tensors)
    ]
    for index, parameter in enumerate(tensors):
        if naming.offsets(parameter.name) in used:
            parameters.append(
                KernelParameter(naming.offsets(parameter.name), kind.OFFSETS, False, index)
            )
        for dim, size in enumerate(parameter.source.shape):
            name = naming.size(parameter.name, dim)
            if name in used:
                constexpr = isinstance(size, Symbol) and size.constexpr
                parameters.append(KernelParameter(name, kind.SIZE, constexpr, index, dim))
        for dim in range(parameter.source.ndim):
            name = naming.stride(parameter.name, dim)
            if name in used:
                parameters.append(KernelParameter(name, kind.STRIDE, False, index, dim))
    for parameter in spec.scalar_parameters:
        parameters.append(KernelParameter(parameter.name, kind.SCALAR, parameter.source.constexpr))
    parameters += [KernelParameter(n, kind.SYMBOL, False) for n in sorted(spec.runtime_symbols)]
    parameters += [KernelParameter(n, kind.SYMBOL, True) for n in sorted(spec.constexpr_symbols)]
    padded = list(context.padded.values())
    parameters += [
        KernelParameter(p.name, kind.PADDED_SIZE, True, expression=p.size)
        for p in padded
        if not p.is_meta
    ]
    parameters.append(KernelParameter(naming.INT64_FLAG, kind.INT64_FLAG, True))
    parameters += [
        KernelParameter(name, kind.LAYOUT_FLAG, True, expression=condition)
        for name, condition in context.flags.items()
    ]
    parameters += [
        KernelParameter(name, kind.DESCRIPTOR_FLAG, True, tensor_index=index)
        for name, index in context.descriptor_flags.items()
    ]
    parameters += [
        KernelParameter(a.name, kind.SIZE_ALIGNMENT, True, expression=a.size, cap=a.cap)
        for a in context.alignments.values()
    ]
    parameters += [KernelParameter(n, kind.META, True) for n in sorted(spec.meta_symbols)]
    parameters += [
        KernelParameter(p.name, kind.META, True, expression=p.size) for p in padded if p.is_meta
    ]
    return KernelSignature(tuple(parameters), tuple(p.name for p in tensors))


def _widening(signature: KernelSignature) -> list[str]:
    """Sizes and strides cast to 64 bits when the host sets the 64-bit flag.

    Every index the kernel computes is built from the program index (widened
    in the prologue), sizes, strides, aranges and loop variables over ranges
    of sizes, so with these 64-bit no index or offset is computed in int32.
    """
    widened = [
        p.name
        for p in signature.of_kind(ParameterKind.SIZE) + signature.of_kind(ParameterKind.STRIDE)
        if not p.constexpr
    ]
    if not widened:
        return []
    return [f"if {naming.INT64_FLAG}:"] + [f"    {n} = tl.cast({n}, tl.int64)" for n in widened]


def _launch_checks(
    context: Context,
) -> tuple[tuple[ShapeCheck, ...], tuple[SizeRequirement, ...]]:
    """Outermost shapes that may differ from the grid, and sizes that must be 1."""
    grid = context.grid
    shapes = []
    requirements = []
    for parameter in context.spec.tensor_parameters:
        if parameter.name in context.through_source - context.addressed:
            # Reached only through x.source: its arrangement never meets the grid.
            continue
        shape = tuple(context.expression(size) for size in parameter.arranged.shape)
        if not all(_same(a, b) for a, b in zip(shape, grid)):
            shapes.append(ShapeCheck(parameter.name, shape))
    # Requirements were worded while the arrangement ran, on tensors Tensor(1) left unnamed.
    names = {p.source.name: p.name for p in context.spec.tensor_parameters}
    for parameter in context.spec.tensor_parameters:
        for requirement in parameter.arranged.all_requirements().values():
            size = context.expression(requirement.size)
            message = renamed(requirement.message, names)
            requirements.append(SizeRequirement(size, message, requirement.allowed, parameter.name))
    return tuple(shapes), tuple(requirements)


def _module_text(
    context: Context, signature: KernelSignature, prologue: list[str], body: list[ast.stmt]
) -> str:
    """The Triton module: imports, then the ``@triton.jit`` kernel."""
    spec = context.spec
    kernel_name = naming.kernel(spec.name)
    arguments = ", ".join(f"{p.name}: tl.constexpr" if p.constexpr else p.name for p in signature)
    # Parsed rather than built, so that every field the running Python's ast
    # has (type_params from 3.12 on) is there for unparse.
    function = ast.parse(f"def {kernel_name}():\n    pass\n").body[0]
    assert isinstance(function, ast.FunctionDef)
    function.body = body
    body_source = ast.unparse(ast.fix_missing_locations(function)).split("\n", 1)[1]
    header = [
        f'"""Generated by NineToothed from {spec.name!r}; do not edit."""',
        "",
        "import triton",
        "import triton.language as tl",
    ]
    if context.uses_libdevice:
        header.append(f"from triton.language.extra import {naming.LIBDEVICE}")
    for name in sorted(context.injected):
        header.append(f"# {name}: a triton.jit helper the application calls (provided at load)")
    if context.uses_add or context.promoted_math:
        header += _CORE_IMPORT
    if context.uses_add:
        header += ["", ""] + _ADD.splitlines()
    if context.uses_spread:
        header += ["", ""] + _SPREAD.splitlines()
    for name in sorted(context.promoted_math):
        header += ["", ""] + _promoted_math(name).splitlines()
    header += ["", "", "@triton.jit", f"def {kernel_name}({arguments}):"]
    lines = header + [f"    {line}" for line in prologue] + [body_source]
    return "\n".join(lines) + "\n"


def _to_tensor() -> str:
    """Triton's scalar-to-tensor builtin as the kernel names it: ``tl.to_tensor`` (Triton
    3.9, which its interpreter also patches), else the language's core module's, under
    :data:`_CORE` (Triton 3.6 has the builtin but does not export it from
    ``triton.language``; its interpreter patches the builtins of ``triton.language.core``
    only where a kernel's module holds that module itself, so ``tl.core.to_tensor`` fails
    there with "Did you forget to add @triton.jit?")."""
    import triton.language as tl

    return "tl.to_tensor" if hasattr(tl, "to_tensor") else f"{_CORE}.to_tensor"


_CORE = f"{naming.PREFIX}language_core"
"""The name a kernel module gives ``triton.language.core`` where it needs it."""

_TO_TENSOR = _to_tensor()

_CORE_IMPORT = (
    [] if _TO_TENSOR == "tl.to_tensor" else [f"from triton.language import core as {_CORE}"]
)
"""The import :data:`_TO_TENSOR` needs (none on Triton 3.9)."""

_ADD = f"""@triton.jit
def {naming.ADD}(a, b):
    # + of two bools is their logical or, as in the frameworks (Triton: exclusive or).
    if {_TO_TENSOR}(a).dtype == tl.int1 and {_TO_TENSOR}(b).dtype == tl.int1:
        result = a | b
    else:
        result = a + b
    return result"""
"""The helper :data:`naming.ADD` names, in modules whose application adds."""


_SPREAD = f"""@triton.jit
def {naming.SPREAD}(value, keep, other):
    # Lanes outside the source get the fill value, as a masked load's would.
    return tl.where(keep, value, tl.full(value.shape, other, value.dtype))"""
"""The helper :data:`naming.SPREAD` names, in modules that load a tile once along some
of its dimensions and mask it along others (``memory.Spread``)."""


def _promoted_math(name: str) -> str:
    """The helper :func:`naming.promoted_math` names: Triton's ``tl.<name>`` of the
    operand, float16 and bfloat16 converted to float32 first (the result stays
    float32, as newer upstream's); other types go to Triton as they are."""
    return f"""@triton.jit
def {naming.promoted_math(name)}(x):
    x = {_TO_TENSOR}(x)
    if x.dtype == tl.float16 or x.dtype == tl.bfloat16:
        x = x.to(tl.float32)
    return tl.{name}(x)"""


def _is_one(size: SymbolLike) -> bool:
    return isinstance(size, int) and size == 1


def _same(left: SymbolLike, right: SymbolLike) -> bool:
    """Whether two sizes are structurally equal (both symbols, or both the same int)."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return left == right
    return not isinstance(left, Symbol) and not isinstance(right, Symbol) and left == right
