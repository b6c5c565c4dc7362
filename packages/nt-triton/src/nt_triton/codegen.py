"""KernelSpec → Triton kernel source: the tile-to-program and source-to-target mappings.

The outermost level of every arranged parameter is the launch grid: one
program per element, its index decomposed row-major from ``tl.program_id(0)``.
In the application, a parameter's name stands for the level below that (its
tile, loaded); ``x[k]`` goes one level deeper; assigning to a parameter stores.
Each load or store resolves the arrangement's bindings into one index
expression per source dimension — program indices for the outermost level,
the application's subscripts for middle levels, ``tl.arange`` for the tile —
and a mask from the ranges the bindings recorded, leaving out the ones that
hold by construction.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import Any

from ninetoothed.errors import CodegenError
from ninetoothed.ir import KernelSpec, Parameter
from ninetoothed.language import LIBDEVICE, TRITON_LANGUAGE, LanguageReference
from ninetoothed.mapping import Binding
from ninetoothed.simplify import simplify
from ninetoothed.symbol import Symbol, SymbolLike, next_power_of_two
from ninetoothed.tensor import Tensor
from nt_triton import inline

PROGRAM_ID = "ninetoothed_program_id"
INT64_FLAG = "ninetoothed_int64"
GRID_INDEX = "ninetoothed_grid_index_{}"
PLACEHOLDER = "ninetoothed_placeholder_{}"


@dataclass(frozen=True)
class View:
    """A level of a tensor parameter, as the application sees it."""

    parameter: Parameter
    depth: int
    indices: tuple[tuple[ast.expr, ...], ...] = ()

    @property
    def level(self) -> Tensor:
        return self.parameter.arranged.levels()[self.depth]

    @property
    def is_innermost(self) -> bool:
        return self.depth == len(self.parameter.arranged.levels()) - 1


@dataclass(frozen=True)
class SourceView:
    """``x.source``: the unarranged tensor."""

    parameter: Parameter


@dataclass(frozen=True)
class ElementType:
    """``x.dtype`` at the bottom of the hierarchy: the element type."""

    parameter: Parameter


@dataclass(frozen=True)
class TypeView:
    """``x.dtype`` of a hierarchical level: the next level, for ``.shape``/``.dtype``."""

    view: View


@dataclass
class PaddedSize:
    """A tile size that is not a known power of two, padded on the host."""

    name: str
    size: SymbolLike


@dataclass
class GeneratedSource:
    """The kernel's source and what the launcher needs to call it."""

    name: str
    source: str
    kernel_name: str
    parameters: list[str]
    """Kernel parameters, in order (meta symbols excluded: auto-tuning supplies them)."""

    constexpr_parameters: set[str]
    padded_sizes: list[PaddedSize]
    injected: dict[str, Any]
    """Objects the kernel refers to by name (users' ``triton.jit`` helpers)."""

    used_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Kernel parameter name → (tensor index, dimension) for sizes."""

    used_strides: dict[str, tuple[int, int]] = field(default_factory=dict)

    loaded: tuple[str, ...] = ()
    """Tensor parameters the kernel reads, in parameter order."""

    stored: tuple[str, ...] = ()
    """Tensor parameters the kernel writes (its outputs), in parameter order."""


class KernelWriter:
    """Writes one kernel; see the module docstring for the mapping it realises."""

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.parameters = {p.name: p for p in spec.parameters}
        self.tensor_index = {p.name: i for i, p in enumerate(spec.tensor_parameters)}
        self.renames: dict[str, SymbolLike] = {}
        for parameter in spec.tensor_parameters:
            source = parameter.source
            for dim, size in enumerate(source.shape):
                if isinstance(size, Symbol) and size.name == source.size_string(dim):
                    self.renames[size.name] = Symbol(
                        f"{parameter.name}_size_{dim}",
                        constexpr=size.constexpr,
                        meta=size.meta,
                        upper_bound=size.upper_bound,
                        lower_bound=size.lower_bound,
                        power_of_two=size.power_of_two,
                    )
            for dim in range(source.ndim):
                self.renames[source.stride_string(dim)] = Symbol(f"{parameter.name}_stride_{dim}")
        self._bindings: dict[str, dict[str, Binding]] = {}
        self._placeholders: dict[str, ast.expr] = {}
        self._placeholder_ids = itertools.count()
        self.used_names: set[str] = set()
        self.aranges: dict[str, str] = {}
        self.padded: dict[str, PaddedSize] = {}
        self.injected: dict[str, Any] = {}
        self.uses_libdevice = False
        self.tiles: list[tuple[SymbolLike, ...]] = []
        """Shapes of the tiles loaded and stored, for auto-tuning's limits."""
        self.has_loop = False
        self.loop_tiles: list[tuple[SymbolLike, ...]] = []
        """Shapes of tiles loaded inside loops: software pipelining keeps
        ``num_stages`` copies of each in shared memory."""
        self.loaded: set[str] = set()
        """Tensor parameters the application reads."""
        self.stored: set[str] = set()
        """Tensor parameters the application writes: the outputs."""
        self.grid = tuple(self.expression(size) for size in spec.grid)

    # ------------------------------------------------------------ symbols
    def expression(self, value: SymbolLike) -> SymbolLike:
        """``value`` with source names renamed to parameter names, simplified."""
        if isinstance(value, Symbol):
            value = value.substitute(self.renames)
        return simplify(value)

    def bindings(self, parameter: Parameter) -> dict[str, Binding]:
        if parameter.name not in self._bindings:
            self._bindings[parameter.name] = {
                variable: Binding(
                    self.expression(binding.expression),
                    None if binding.bound is None else self.expression(binding.bound),
                    binding.may_be_negative,
                )
                for variable, binding in parameter.arranged.all_bindings().items()
            }
        return self._bindings[parameter.name]

    def code(self, value: SymbolLike) -> ast.expr:
        """AST of an expression, noting the kernel parameters it uses."""
        if isinstance(value, bool):
            return ast.Constant(value=value)
        if isinstance(value, Symbol):
            self.used_names |= value.names()
            node = ast.parse(str(value), mode="eval").body
            return _Placeholders(self._placeholders).visit(node)
        return ast.Constant(value=value)

    def placeholder(self, node: ast.expr) -> Symbol:
        """A symbol standing for an application expression (a subscript)."""
        name = PLACEHOLDER.format(next(self._placeholder_ids))
        self._placeholders[name] = node
        return Symbol(name)

    # ------------------------------------------------------------- tiles
    def block_size(self, parameter: Parameter, depth: int, dim: int) -> SymbolLike:
        """The (power-of-two) extent of a tile dimension as loaded."""
        size = self.expression(parameter.arranged.levels()[depth].dims[dim].size)
        if isinstance(size, int):
            return next_power_of_two(size)
        if size.is_power_of_two():
            return size
        if size.is_runtime():
            raise CodegenError(
                f"{self.spec.name}: the tile of {parameter.name!r} has size {size} in dimension "
                f"{dim}, which is only known at run time; tile sizes must be compile-time: "
                "use meta or constexpr symbols, or shape_options={'constexpr': True}"
            )
        free = size.free_symbols.values()
        if any(s.meta for s in free) and any(not s.meta for s in free):
            raise CodegenError(
                f"{self.spec.name}: the tile size {size} of {parameter.name!r} mixes meta and "
                "constexpr symbols and is not a known power of two; padding it is not supported"
            )
        name = f"{parameter.name}_padded_size_{depth}_{dim}"
        self.padded.setdefault(name, PaddedSize(name, size))
        return Symbol(name, constexpr=True, power_of_two=True)

    def block_variables(self, view: View) -> dict[str, SymbolLike]:
        """Index variables of a loaded tile: ``tl.arange`` broadcast to its dimension."""
        level = view.level
        values: dict[str, SymbolLike] = {}
        rank = level.ndim
        for dim, level_dim in enumerate(level.dims):
            size = self.expression(level_dim.size)
            if isinstance(size, int) and size == 1:
                values[level_dim.variable] = 0
                continue
            extent = self.block_size(view.parameter, view.depth, dim)
            name = f"{view.parameter.name}_arange_{view.depth}_{dim}"
            if name not in self.aranges:
                self.used_names |= names_in(extent)
                expansion = ""
                if rank > 1:
                    expansion = (
                        "[" + ", ".join(":" if d == dim else "None" for d in range(rank)) + "]"
                    )
                self.aranges[name] = f"{name} = tl.arange(0, {extent}){expansion}"
            values[level_dim.variable] = Symbol(name)
        return values

    def tile_shape(self, view: View) -> tuple[SymbolLike, ...]:
        return tuple(self.block_size(view.parameter, view.depth, d) for d in range(view.level.ndim))

    # ------------------------------------------------- source-to-target
    def addressing(self, view: View) -> tuple[list[SymbolLike], list[SymbolLike]]:
        """Per source dimension, the index a tile element reads; and the mask terms."""
        parameter = view.parameter
        levels = parameter.arranged.levels()
        if not view.is_innermost:
            raise CodegenError(
                f"{self.spec.name}: {parameter.name!r} has {len(levels) - view.depth - 1} more "
                f"level(s) below this one; index it (e.g. {parameter.name}[k]) to reach a tile"
            )
        live: dict[str, SymbolLike] = {}
        ranges: dict[str, SymbolLike] = {}
        for dim, level_dim in enumerate(levels[0].dims):
            grid_size = self.grid[dim]
            live[level_dim.variable] = (
                0
                if isinstance(grid_size, int) and grid_size == 1
                else Symbol(GRID_INDEX.format(dim))
            )
            ranges[level_dim.variable] = self.expression(level_dim.size)
        for depth, indices in enumerate(view.indices, start=1):
            for level_dim, index in zip(levels[depth].dims, indices):
                live[level_dim.variable] = self.placeholder(index)
                ranges[level_dim.variable] = self.expression(level_dim.size)
        block = self.block_variables(view)
        live.update(block)
        for dim, level_dim in enumerate(view.level.dims):
            size = self.expression(level_dim.size)
            if self.block_size(parameter, view.depth, dim) == size:
                ranges[level_dim.variable] = size

        bindings = self.bindings(parameter)
        resolved: dict[str, SymbolLike] = dict(live)

        def value_of(variable: str) -> SymbolLike:
            if variable in resolved:
                return resolved[variable]
            binding = bindings.get(variable)
            if binding is None:
                raise CodegenError(
                    f"{self.spec.name}: index variable {variable} of {parameter.name!r} is "
                    "neither bound nor live; was a level replaced after being arranged?"
                )
            expression = binding.expression
            if isinstance(expression, Symbol):
                expression = expression.substitute(
                    {
                        name: value_of(name)
                        for name in expression.names()
                        if name in bindings or name in live
                    }
                )
            resolved[variable] = simplify(expression)
            return resolved[variable]

        indices = [value_of(variable) for variable in parameter.source.source_variables]
        mask: list[SymbolLike] = []
        for variable, binding in bindings.items():
            if binding.bound is None:
                continue
            value = value_of(variable)
            redundant = _is_in_range(value, binding.bound, live, ranges)
            if not redundant:
                mask.append(value < binding.bound)
            if binding.may_be_negative and not (isinstance(value, int) and value >= 0):
                mask.append(value >= 0)
        for level_dim in view.level.dims:
            variable_value = block.get(level_dim.variable)
            if isinstance(variable_value, Symbol) and level_dim.variable not in ranges:
                mask.append(variable_value < self.expression(level_dim.size))
        mask = [term for term in mask if term is not True]
        if any(term is False for term in mask):
            mask = [False]
        return indices, mask

    def pointers_and_mask(self, view: View) -> tuple[ast.expr, ast.expr | None]:
        parameter = view.parameter
        indices, mask = self.addressing(view)
        self.tiles.append(self.tile_shape(view))
        offsets: SymbolLike = 0
        for dim, index in enumerate(indices):
            offsets = offsets + index * Symbol(f"{parameter.name}_stride_{dim}")
        pointer_name = f"{parameter.name}_pointer"
        self.used_names.add(pointer_name)
        pointers = ast.BinOp(
            left=ast.Name(pointer_name, ast.Load()), op=ast.Add(), right=self.code(offsets)
        )
        block_names = {
            f"{parameter.name}_arange_{view.depth}_{d}" for d in range(view.level.ndim)
        } & set(self.aranges)
        if not block_names <= names_in(offsets):
            shape = ast.Tuple([self.code(size) for size in self.tile_shape(view)], ast.Load())
            pointers = _call("tl.broadcast_to", [pointers, shape])
        mask_node: ast.expr | None = None
        for term in mask:
            node = self.code(term)
            if block_names and not names_in(term) & block_names and isinstance(node, ast.Compare):
                # A scalar condition is compared after broadcasting to the tile:
                # Triton's interpreter rejects masks built from scalar booleans.
                shape = ast.Tuple([self.code(size) for size in self.tile_shape(view)], ast.Load())
                node.left = _call("tl.broadcast_to", [node.left, shape])
            mask_node = node if mask_node is None else ast.BinOp(mask_node, ast.BitAnd(), node)
        return pointers, mask_node

    def load(
        self, view: View, addressing: tuple[ast.expr, ast.expr | None] | None = None
    ) -> ast.expr:
        self.loaded.add(view.parameter.name)
        pointers, mask = addressing or self.pointers_and_mask(view)
        keywords = []
        if mask is not None:
            keywords.append(ast.keyword("mask", mask))
            other = view.parameter.source.other
            keywords.append(ast.keyword("other", ast.Constant(0 if other is None else other)))
        return _call("tl.load", [pointers], keywords)

    def store(
        self,
        view: View,
        value: ast.expr,
        addressing: tuple[ast.expr, ast.expr | None] | None = None,
    ) -> ast.stmt:
        self.stored.add(view.parameter.name)
        pointers, mask = addressing or self.pointers_and_mask(view)
        keywords = [ast.keyword("mask", mask)] if mask is not None else []
        return ast.Expr(_call("tl.store", [pointers, value], keywords))

    def offsets(self, view: View, dim: int) -> ast.expr:
        indices, _ = self.addressing(view)
        if not -len(indices) <= dim < len(indices):
            raise CodegenError(
                f"{self.spec.name}: {view.parameter.name}.offsets({dim}): the source has "
                f"{len(indices)} dimensions"
            )
        return self.code(indices[dim])

    # ------------------------------------------------------------ writing
    def write(self) -> GeneratedSource:
        definition = inline.parse_function(self.spec.application)
        local = inline.local_names(definition)
        definition = inline.Inliner(local).visit(definition)
        local = inline.local_names(definition)
        rewriter = _ApplicationRewriter(self, local)
        body = rewriter.rewrite_body(definition.body)
        if not body:
            body = [ast.Pass()]
        return self._assemble(body)

    def _assemble(self, body: list[ast.stmt]) -> GeneratedSource:
        spec = self.spec
        prologue: list[str] = []
        grid = self.grid
        if grid and any(not (isinstance(g, int) and g == 1) for g in grid):
            prologue.append(f"{PROGRAM_ID} = tl.program_id(0)")
            inner: SymbolLike = 1
            decomposition = []
            for dim in range(len(grid) - 1, -1, -1):
                size = grid[dim]
                if isinstance(size, int) and size == 1:
                    continue
                index: SymbolLike = Symbol(PROGRAM_ID) // inner
                if dim > 0 and any(not (isinstance(g, int) and g == 1) for g in grid[:dim]):
                    index = index % size
                decomposition.append(f"{GRID_INDEX.format(dim)} = {index}")
                self.used_names |= names_in(index)
                inner = inner * size
            prologue.extend(reversed(decomposition))
        prologue.extend(self.aranges.values())

        names: list[str] = []
        constexpr: set[str] = set()
        used_sizes: dict[str, tuple[int, int]] = {}
        used_strides: dict[str, tuple[int, int]] = {}
        for parameter in spec.tensor_parameters:
            names.append(f"{parameter.name}_pointer")
        for parameter in spec.tensor_parameters:
            index = self.tensor_index[parameter.name]
            for dim, size in enumerate(parameter.source.shape):
                name = f"{parameter.name}_size_{dim}"
                if name in self.used_names:
                    names.append(name)
                    used_sizes[name] = (index, dim)
                    if isinstance(size, Symbol) and size.constexpr:
                        constexpr.add(name)
            for dim in range(parameter.source.ndim):
                name = f"{parameter.name}_stride_{dim}"
                if name in self.used_names:
                    names.append(name)
                    used_strides[name] = (index, dim)
        for parameter in spec.scalar_parameters:
            names.append(parameter.name)
            if parameter.source.constexpr:
                constexpr.add(parameter.name)
        names.extend(sorted(spec.runtime_symbols))
        for name in sorted(spec.constexpr_symbols):
            names.append(name)
            constexpr.add(name)
        for name in self.padded:
            if not any(s.meta for s in self.padded[name].size.free_symbols.values()):  # type: ignore[union-attr]
                names.append(name)
                constexpr.add(name)
        names.append(INT64_FLAG)
        constexpr.add(INT64_FLAG)
        meta_names = sorted(spec.meta_symbols) + [
            name
            for name, padded in self.padded.items()
            if any(s.meta for s in padded.size.free_symbols.values())  # type: ignore[union-attr]
        ]

        strides_used = [n for n in names if n in used_strides]
        widening = []
        if strides_used:
            widening.append(f"if {INT64_FLAG}:")
            widening.extend(f"    {n} = tl.cast({n}, tl.int64)" for n in strides_used)

        kernel_name = f"{_identifier(spec.name)}_kernel"
        arguments = ", ".join(
            [f"{n}: tl.constexpr" if n in constexpr else n for n in names]
            + [f"{n}: tl.constexpr" for n in meta_names]
        )
        function = ast.FunctionDef(
            name=kernel_name,
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body,
            decorator_list=[],
            returns=None,
            type_params=[],
            lineno=0,
        )
        body_source = ast.unparse(ast.fix_missing_locations(function)).split("\n", 1)[1]
        header = [
            f'"""Generated by NineToothed from {spec.name!r}; do not edit."""',
            "",
            "import triton",
            "import triton.language as tl",
        ]
        if self.uses_libdevice:
            header.append("from triton.language.extra import libdevice")
        for name in sorted(self.injected):
            header.append(f"# {name}: a triton.jit helper the application calls (provided at load)")
        header += ["", "", "@triton.jit", f"def {kernel_name}({arguments}):"]
        lines = header + [f"    {line}" for line in prologue + widening] + [body_source]
        return GeneratedSource(
            name=spec.name,
            source="\n".join(lines) + "\n",
            kernel_name=kernel_name,
            parameters=names,
            constexpr_parameters=constexpr,
            padded_sizes=list(self.padded.values()),
            injected=dict(self.injected),
            used_sizes=used_sizes,
            used_strides=used_strides,
            loaded=tuple(p.name for p in spec.tensor_parameters if p.name in self.loaded),
            stored=tuple(p.name for p in spec.tensor_parameters if p.name in self.stored),
        )


class _ApplicationRewriter(ast.NodeTransformer):
    """Turns tensor references in the application into loads, stores and shapes."""

    def __init__(self, writer: KernelWriter, local: set[str]) -> None:
        self.writer = writer
        self.local = local
        self.spec = writer.spec
        self.prelude: list[ast.stmt] = []
        self.loop_depth = 0
        self.hoisting = False
        self.cache: dict[tuple[Any, ...], dict[str, ast.expr]] = {}
        self.counter = itertools.count()

    def rewrite_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """Rewrite a statement list; loads are hoisted into named statements."""
        outer_prelude, outer_hoisting = self.prelude, self.hoisting
        self.cache.clear()
        result: list[ast.stmt] = []
        for statement in body:
            self.prelude, self.hoisting = [], True
            rewritten = self.visit(statement)
            result.extend(self.prelude)
            if isinstance(rewritten, list):
                result.extend(rewritten)
            elif rewritten is not None:
                result.append(rewritten)
            self.forget_assigned(statement)
        self.cache.clear()
        self.prelude, self.hoisting = outer_prelude, outer_hoisting
        return result

    def fresh(self, stem: str) -> str:
        """A new local name, ``stem_N``, not clashing with the application's."""
        while True:
            name = f"{stem}_{next(self.counter)}"
            if name not in self.local:
                self.local.add(name)
                return name

    def addressing(self, view: View) -> tuple[ast.expr, ast.expr | None]:
        """Pointers and mask of a tile, hoisted into named statements when possible."""
        key = _view_key(view)
        if self.hoisting and key in self.cache and "pointers" in self.cache[key]:
            entry = self.cache[key]
            return entry["pointers"], entry.get("mask")
        pointers, mask = self.writer.pointers_and_mask(view)
        if not self.hoisting:
            return pointers, mask
        stem = view.parameter.name
        offsets_name = self.fresh(f"{stem}_pointers")
        self.prelude.append(_assign(offsets_name, pointers))
        entry = self.cache.setdefault(key, {})
        entry["pointers"] = ast.Name(offsets_name, ast.Load())
        if mask is not None:
            mask_name = self.fresh(f"{stem}_mask")
            self.prelude.append(_assign(mask_name, mask))
            entry["mask"] = ast.Name(mask_name, ast.Load())
        return entry["pointers"], entry.get("mask")

    def load(self, view: View) -> ast.expr:
        """A tile's value: loaded once per straight-line stretch without stores."""
        key = _view_key(view)
        if self.hoisting and "tile" in self.cache.get(key, {}):
            return self.cache[key]["tile"]
        if view.parameter.name in self.writer.stored and self.hoisting:
            # Reading back what this program stored: other threads of the
            # program may have written those elements, so wait for them.
            self.prelude.append(ast.Expr(_call("tl.debug_barrier", [])))
        if self.loop_depth:
            self.writer.loop_tiles.append(self.writer.tile_shape(view))
        load = self.writer.load(view, self.addressing(view))
        if not self.hoisting:
            return load
        name = self.fresh(f"{view.parameter.name}_tile")
        self.prelude.append(_assign(name, load))
        self.cache[key]["tile"] = ast.Name(name, ast.Load())
        return self.cache[key]["tile"]

    def store(self, view: View, value: ast.expr) -> ast.stmt:
        statement = self.writer.store(view, value, self.addressing(view))
        for key, entry in self.cache.items():
            if key[0] == view.parameter.name:
                entry.pop("tile", None)
        return statement

    def forget_assigned(self, statement: ast.stmt) -> None:
        """Drop cached addressing that mentions a name the statement assigned."""
        assigned = {
            node.id
            for node in ast.walk(statement)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        }
        if not assigned:
            return
        for key in list(self.cache):
            if assigned & set(key[2]):
                del self.cache[key]

    # -- values -----------------------------------------------------------
    def value(self, node: ast.expr) -> Any:
        """Resolve a name/attribute/subscript chain to a view or an expression."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            parameter = self.writer.parameters.get(node.id)
            if parameter is not None and node.id not in self._assigned_locals():
                if parameter.is_scalar:
                    return node
                return View(parameter, 1)
            return node
        if isinstance(node, ast.Attribute):
            base = self.value(node.value)
            if isinstance(base, (View, SourceView, ElementType, TypeView)):
                return self.attribute(base, node.attr, node)
            return node
        if isinstance(node, ast.Subscript):
            base = self.value(node.value)
            if isinstance(base, View):
                return self.index(base, node.slice)
            if isinstance(base, tuple):
                position = _constant_int(node.slice)
                if position is None:
                    raise CodegenError(
                        f"{self.spec.name}: shapes can only be indexed with integer constants"
                    )
                return base[position]
            return node
        return node

    def _assigned_locals(self) -> set[str]:
        return set()

    def attribute(self, base: Any, attribute: str, node: ast.Attribute) -> Any:
        writer = self.writer
        if isinstance(base, TypeView):
            if attribute == "shape":
                return tuple(self.node_of(s) for s in self.shape_of(base.view))
            if attribute == "dtype":
                return self.dtype_of(base.view)
            if attribute == "ndim":
                return ast.Constant(base.view.level.ndim)
        if isinstance(base, View):
            if attribute == "shape":
                return tuple(self.node_of(s) for s in self.shape_of(base))
            if attribute == "dtype":
                return self.dtype_of(base)
            if attribute == "ndim":
                return ast.Constant(base.level.ndim)
            if attribute == "source":
                return SourceView(base.parameter)
            if attribute == "offsets":
                return ("offsets", base)
        if isinstance(base, SourceView):
            parameter = base.parameter
            if attribute == "shape":
                return tuple(
                    self.node_of(writer.expression(size)) for size in parameter.source.shape
                )
            if attribute == "strides":
                return tuple(
                    self.node_of(Symbol(f"{parameter.name}_stride_{d}"))
                    for d in range(parameter.source.ndim)
                )
            if attribute == "dtype":
                return ElementType(parameter)
            if attribute == "ndim":
                return ast.Constant(parameter.source.ndim)
        if isinstance(base, ElementType):
            return ast.Attribute(self.element_type(base), attribute, ast.Load())
        raise CodegenError(
            f"{self.spec.name}: unsupported attribute {attribute!r} of a tensor parameter in "
            f"{ast.unparse(node)} (supported: shape, dtype, ndim, source, offsets)"
        )

    def shape_of(self, view: View) -> tuple[SymbolLike, ...]:
        if view.is_innermost:
            return self.writer.tile_shape(view)
        return tuple(self.writer.expression(dim.size) for dim in view.level.dims)

    def dtype_of(self, view: View) -> Any:
        if view.is_innermost:
            return ElementType(view.parameter)
        return TypeView(View(view.parameter, view.depth + 1, view.indices))

    def element_type(self, element: ElementType) -> ast.expr:
        pointer = f"{element.parameter.name}_pointer"
        self.writer.used_names.add(pointer)
        return ast.parse(f"{pointer}.dtype.element_ty", mode="eval").body

    def node_of(self, value: SymbolLike) -> ast.expr:
        return self.writer.code(value)

    def index(self, view: View, index: ast.expr) -> View:
        if view.is_innermost:
            raise CodegenError(
                f"{self.spec.name}: {view.parameter.name!r} is a tile at this level; a tile "
                "cannot be indexed inside the application"
            )
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        if len(items) != view.level.ndim:
            raise CodegenError(
                f"{self.spec.name}: indexing {view.parameter.name!r} needs {view.level.ndim} "
                f"indices (one per dimension of shape {view.level.shape}), got {len(items)}"
            )
        items = [self.visit(item) for item in items]
        return View(view.parameter, view.depth + 1, (*view.indices, tuple(items)))

    def materialize(self, value: Any, node: ast.expr) -> ast.expr:
        """Turn a resolved value into code (a view becomes a load)."""
        if isinstance(value, View):
            return self.load(value)
        if isinstance(value, tuple) and not isinstance(value, ast.AST):
            if value and value[0] == "offsets":
                raise CodegenError(f"{self.spec.name}: offsets must be called: x.offsets(dim)")
            return ast.Tuple(list(value), ast.Load())
        if isinstance(value, ElementType):
            return self.element_type(value)
        if isinstance(value, (SourceView, TypeView)):
            raise CodegenError(
                f"{self.spec.name}: {ast.unparse(node)} is a tensor description, not a value"
            )
        return value

    # -- visitors ---------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> ast.expr:
        if not isinstance(node.ctx, ast.Load):
            return node
        value = self.value(node)
        if value is not node:
            return self.materialize(value, node)
        return self.global_reference(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        value = self.value(node)
        if value is not node:
            return self.materialize(value, node)
        resolved = inline.resolve(node, self.local)
        if resolved is not inline.UNRESOLVED:
            reference = self.reference(resolved, node)
            if reference is not None:
                return reference
        node.value = self.visit(node.value)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if isinstance(node.ctx, ast.Load):
            value = self.value(node)
            if value is not node:
                return self.materialize(value, node)
        node.value = self.visit(node.value)
        node.slice = self.visit(node.slice)
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "offsets":
            base = self.value(node.func.value)
            if isinstance(base, View):
                if len(node.args) != 1 or node.keywords:
                    raise CodegenError(f"{self.spec.name}: offsets takes one argument, the dim")
                dim = _constant_int(node.args[0])
                if dim is None:
                    raise CodegenError(f"{self.spec.name}: offsets(dim) needs an integer constant")
                return self.writer.offsets(base, dim)
        folded = _fold_builtin_call(node, self.local)
        if folded is not None:
            return folded
        node.func = self.visit(node.func)
        node.args = [self.visit(arg) for arg in node.args]
        node.keywords = [ast.keyword(k.arg, self.visit(k.value)) for k in node.keywords]
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.stmt | list[ast.stmt]:
        value = self.visit(node.value)
        if len(node.targets) == 1:
            view = self.target_view(node.targets[0])
            if view is not None:
                return self.store(view, value)
        for target in node.targets:
            if self.target_view(target) is not None or any(
                self.target_view(t) is not None
                for t in ast.walk(target)
                if isinstance(t, (ast.Name, ast.Subscript)) and t is not target
            ):
                raise CodegenError(
                    f"{self.spec.name}: store to a tensor parameter with a plain assignment "
                    f"({ast.unparse(target)} = ...), not chained or unpacked"
                )
        node.targets = [self.visit(t) for t in node.targets]
        node.value = value
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        view = self.target_view(node.target)
        if view is not None:
            current = self.load(view)
            value = ast.BinOp(current, node.op, self.visit(node.value))
            return self.store(view, value)
        node.value = self.visit(node.value)
        node.target = self.visit(node.target)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return None  # type: ignore[return-value]
        return self.visit_Assign(ast.Assign(targets=[node.target], value=node.value, lineno=0))

    def visit_For(self, node: ast.For) -> ast.stmt:
        self.writer.has_loop = True
        node.iter = self.visit(node.iter)
        self.cache.clear()
        self.loop_depth += 1
        node.body = self.rewrite_body(node.body)
        self.loop_depth -= 1
        node.orelse = self.rewrite_body(node.orelse)
        return node

    def visit_While(self, node: ast.While) -> ast.stmt:
        self.writer.has_loop = True
        # The test runs before every iteration: its loads cannot be hoisted.
        hoisting, self.hoisting = self.hoisting, False
        node.test = self.visit(node.test)
        self.hoisting = hoisting
        self.cache.clear()
        self.loop_depth += 1
        node.body = self.rewrite_body(node.body)
        self.loop_depth -= 1
        node.orelse = self.rewrite_body(node.orelse)
        return node

    def visit_If(self, node: ast.If) -> ast.stmt:
        node.test = self.visit(node.test)
        node.body = self.rewrite_body(node.body)
        node.orelse = self.rewrite_body(node.orelse)
        return node

    def visit_With(self, node: ast.With) -> ast.stmt:
        node.body = self.rewrite_body(node.body)
        return node

    def visit_Return(self, node: ast.Return) -> ast.stmt:
        if node.value is not None:
            raise CodegenError(
                f"{self.spec.name}: an application returns nothing; assign to an output "
                "parameter to store results"
            )
        return node

    def target_view(self, target: ast.expr) -> View | None:
        if isinstance(target, ast.Name):
            parameter = self.writer.parameters.get(target.id)
            if parameter is None:
                return None
            if parameter.is_scalar:
                raise CodegenError(
                    f"{self.spec.name}: {target.id!r} is a scalar parameter and cannot be "
                    "assigned to"
                )
            return View(parameter, 1)
        if isinstance(target, ast.Subscript):
            base = (
                self.target_view(target.value)
                if isinstance(target.value, (ast.Name, ast.Subscript))
                else None
            )
            if base is None:
                return None
            return self.index(base, target.slice)
        return None

    # -- references to Python objects ------------------------------------
    def global_reference(self, node: ast.Name) -> ast.expr:
        if node.id in self.local:
            return node
        resolved = inline.resolve(node, self.local)
        if resolved is inline.UNRESOLVED:
            return node
        reference = self.reference(resolved, node)
        return reference if reference is not None else node

    def reference(self, value: Any, node: ast.expr) -> ast.expr | None:
        """Code for a Python object the application names, or None to keep the name."""
        if isinstance(value, LanguageReference):
            path = value.path
            if path == LIBDEVICE or path.startswith(LIBDEVICE + "."):
                self.writer.uses_libdevice = True
                return _dotted("libdevice" + path[len(LIBDEVICE) :])
            if path.startswith(TRITON_LANGUAGE):
                return _dotted("tl" + path[len(TRITON_LANGUAGE) :])
        module = getattr(value, "__name__", None)
        if type(value).__name__ == "module" and module is not None:
            if module == "triton.language" or module == "ninetoothed.language":
                return _dotted("tl")
            if module == "triton":
                return _dotted("triton")
            if module.startswith("triton.language.extra") and module.endswith("libdevice"):
                self.writer.uses_libdevice = True
                return _dotted("libdevice")
            return None
        if isinstance(value, bool) or isinstance(value, (int, float)):
            return ast.Constant(value)
        if (
            type(value).__name__ in ("JITFunction", "JitFunction")
            or hasattr(value, "fn")
            and hasattr(value, "run")
        ):
            name = f"ninetoothed_helper_{_identifier(getattr(value, '__name__', 'fn'))}"
            self.writer.injected[name] = value
            return _dotted(name)
        if value in (range, min, max, float, int, len, abs, print, tuple):
            return None
        if callable(value) and getattr(value, "__module__", "").startswith("triton"):
            qualified = f"{value.__module__}.{value.__name__}"
            if qualified.startswith(TRITON_LANGUAGE):
                return _dotted("tl" + qualified[len(TRITON_LANGUAGE) :])
        return None


class _Placeholders(ast.NodeTransformer):
    """Put application expressions back where placeholders stand."""

    def __init__(self, placeholders: dict[str, ast.expr]) -> None:
        self.placeholders = placeholders

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.placeholders:
            # Re-parse rather than deep-copy: nodes carry their namespaces (modules).
            return ast.parse(ast.unparse(self.placeholders[node.id]), mode="eval").body
        return node


def _is_in_range(
    value: SymbolLike, bound: SymbolLike, live: dict[str, SymbolLike], ranges: dict[str, SymbolLike]
) -> bool:
    """Whether ``0 <= value < bound`` holds by construction."""
    if isinstance(value, int) and isinstance(bound, int):
        return 0 <= value < bound
    if isinstance(value, int) and value == 0 and isinstance(bound, Symbol):
        return False
    if isinstance(value, Symbol):
        for variable, symbol in live.items():
            if isinstance(symbol, Symbol) and symbol == value and variable in ranges:
                return ranges[variable] == bound
    return False


def _fold_builtin_call(node: ast.Call, local: set[str]) -> ast.expr | None:
    """``float("-inf")`` and the like, with constant arguments, become constants."""
    function = inline.resolve(node.func, local)
    if function not in (float, int, bool) or node.keywords:
        return None
    if not all(isinstance(arg, ast.Constant) for arg in node.args):
        return None
    value = function(*(arg.value for arg in node.args))  # type: ignore[operator]
    if isinstance(value, float) and value != value:  # NaN has no literal
        return None
    return ast.Constant(value)


def _view_key(view: View) -> tuple[Any, ...]:
    """Identifies a tile: parameter, level and the index expressions' text."""
    texts = tuple(ast.unparse(index) for indices in view.indices for index in indices)
    names = tuple(
        sorted(
            {
                n.id
                for indices in view.indices
                for i in indices
                for n in ast.walk(i)
                if isinstance(n, ast.Name)
            }
        )
    )
    return (view.parameter.name, view.depth, names, texts)


def _assign(name: str, value: ast.expr) -> ast.stmt:
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value, lineno=0)


def names_in(value: SymbolLike) -> set[str]:
    return value.names() if isinstance(value, Symbol) else set()


def _constant_int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
    ):
        return -node.operand.value
    return None


def _dotted(path: str) -> ast.expr:
    return ast.parse(path, mode="eval").body


def _call(
    function: str, args: list[ast.expr], keywords: list[ast.keyword] | None = None
) -> ast.Call:
    return ast.Call(func=_dotted(function), args=args, keywords=keywords or [])


def _identifier(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"k_{cleaned}"


def write(spec: KernelSpec) -> GeneratedSource:
    """Generate the Triton source for ``spec``."""
    return KernelWriter(spec).write()
