"""The state one generation shares between its stages.

A :class:`Context` lives for one call of :func:`nt_triton._codegen.generate`.
It knows the spec and the symbol renaming (a source tensor's size and stride
symbols become the kernel parameters of the application's parameter, see
:mod:`naming`), turns expressions into code, and collects, as the
application is rewritten, the facts the assembled module needs: which names
the code uses (they become parameters), the aranges and padded sizes, the
tiles, the injected helpers.  :mod:`module` turns the collected facts into
the immutable :class:`~nt_triton._codegen.product.GeneratedSource`; nothing
outside the package sees a context.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Any

from ninetoothed.arrangement.mapping import Binding
from ninetoothed.arrangement.simplify import simplify
from ninetoothed.arrangement.symbol import Symbol, SymbolLike
from ninetoothed.spec.kernel_spec import KernelSpec
from ninetoothed.spec.parameter import Parameter
from nt_triton._codegen import naming

__all__ = ["Alignment", "Context", "PaddedSize", "WholeTiles", "names_in"]


@dataclass(frozen=True)
class PaddedSize:
    """A tile size that is not a known power of two, padded to one (its name, its size)."""

    name: str
    size: Symbol

    @property
    def is_meta(self) -> bool:
        """Whether it depends on meta symbols (so each configuration supplies it)."""
        return any(symbol.meta for symbol in self.size.free_symbols.values())


@dataclass(frozen=True)
class WholeTiles:
    """A tile check ``outer * tile + inner < size`` that holds while ``outer`` is below
    ``size // tile``; ``divisible`` is the compile-time condition that ``tile`` divides
    ``size`` (None when nothing compile-time tells)."""

    size: SymbolLike
    tile: SymbolLike
    divisible: SymbolLike | None


@dataclass(frozen=True)
class Alignment:
    """A constexpr parameter the host sets to the largest power of two, at most ``cap``,
    that divides ``size`` (see :mod:`~nt_triton._codegen.divisibility`)."""

    name: str
    size: SymbolLike
    cap: SymbolLike


class Context:
    """Spec, renaming, and the facts the stages collect; see the module docstring."""

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.parameters = {p.name: p for p in spec.parameters}
        self.renames = _renames(spec)
        self._bindings: dict[str, dict[str, Binding]] = {}
        self._placeholders: dict[str, ast.expr] = {}
        self._placeholder_ids = itertools.count()
        self.used_names: set[str] = set()
        """Names the generated code mentions (sizes and strides among them become parameters)."""
        self.aranges: dict[str, str] = {}
        """Arange name -> its statement, in the order first needed."""
        self.padded: dict[str, PaddedSize] = {}
        self.injected: dict[str, Any] = {}
        self.uses_libdevice = False
        self.uses_add = False
        """Whether the application adds two values (see :data:`naming.ADD`)."""
        self.uses_spread = False
        """Whether a tile loaded once along some dimensions needs a fill
        (see :data:`naming.SPREAD`)."""
        self.promoted_math: set[str] = set()
        """Names of :data:`naming.PROMOTED_MATH` the application calls."""
        self.tiles: list[tuple[SymbolLike, ...]] = []
        self.loads: list[tuple[tuple[SymbolLike, ...], int | None, int]] = []
        """Each load of a tile: its shape, the outermost loop it is in (its number, None
        outside loops) and how many outermost loops the application had begun before it."""
        self.loop: int | None = None
        """The outermost loop being rewritten (its number), None outside loops."""
        self.loops = 0
        """Outermost loops begun so far."""
        self.unselected: dict[str, frozenset[str]] = {}
        """Parameters read only element-wise into whole-tile stores -> those outputs
        (see :mod:`~nt_triton._codegen.unselected`)."""
        self.descriptors: dict[tuple[str, tuple[str, ...]], str] = {}
        """Tensor descriptors a persistent program makes, by parameter and block, -> their
        names (see :mod:`~nt_triton._codegen.descriptors`)."""
        self.descriptor_lines: list[str] = []
        """The prologue's statements making them."""
        self.descriptor_flags: dict[str, int] = {}
        """Their host flags -> the tensor parameter's index."""
        self.flags: dict[str, Symbol] = {}
        """Layout flags (see ``separable.Chain``) -> their conditions, for the host."""
        self.alignments: dict[tuple[str, str], Alignment] = {}
        """Sizes the host reports the alignment of, by their text and their cap's
        (see :mod:`~nt_triton._codegen.divisibility`)."""
        self.whole_tiles: dict[str, list[WholeTiles]] = {}
        """Variables of the loops whose iterations over whole tiles are being rewritten
        -> the tile checks those iterations dropped (see :mod:`ragged_loops`)."""
        self.loop_tiles: list[tuple[tuple[SymbolLike, ...], int | None]] = []
        """Each tile loaded inside a loop: its shape and its outermost loop's number
        (None where unknown: counted with every loop)."""
        self.has_loop = False
        self.loaded: set[str] = set()
        self.stored: set[str] = set()
        self.addressed: set[str] = set()
        """Parameters whose tiles the application reads, writes or takes offsets of."""
        self.grid_dims_read: dict[str, set[int]] = {}
        """Per addressed parameter, the grid dimensions its addresses depend on
        (:mod:`~nt_triton._codegen.ordering` reads them to order the programs)."""
        self.through_source: set[str] = set()
        """Parameters the application reaches through ``x.source`` (see :mod:`source`)."""
        self.grid = tuple(self.expression(size) for size in spec.grid)

    def expression(self, value: SymbolLike) -> SymbolLike:
        """``value`` with source names renamed to parameter names, simplified."""
        if isinstance(value, Symbol):
            value = value.substitute(self.renames)
        return simplify(value)

    def bindings(self, parameter: Parameter) -> dict[str, Binding]:
        """The arranged parameter's bindings, renamed and simplified (computed once)."""
        if parameter.name not in self._bindings:
            self._bindings[parameter.name] = {
                variable: Binding(
                    self.expression(binding.expression),
                    None if binding.bound is None else self.expression(binding.bound),
                    binding.may_be_negative,
                    divisor=None if binding.divisor is None else self.expression(binding.divisor),
                    outer=binding.outer,
                )
                for variable, binding in parameter.arranged.all_bindings().items()
            }
        return self._bindings[parameter.name]

    def code(self, value: SymbolLike) -> ast.expr:
        """AST of an expression, noting the names it uses."""
        if isinstance(value, bool):
            return ast.Constant(value=value)
        if isinstance(value, Symbol):
            self.used_names |= value.names()
            node = ast.parse(str(value), mode="eval").body
            result: ast.expr = _Placeholders(self._placeholders).visit(node)
            return result
        return ast.Constant(value=value)

    def add_load(self, shape: tuple[SymbolLike, ...]) -> None:
        """Note a tile the program loads, and where (see :meth:`phases`)."""
        self.loads.append((shape, self.loop, self.loops))

    def phases(self) -> tuple[tuple[tuple[SymbolLike, ...], ...], ...]:
        """The shapes of the loaded tiles live together: one phase per outermost loop,
        then the end of the program.

        A tile loaded outside loops lives from there to the end (its last use is not
        tracked); a tile loaded inside an outermost loop lives only during that loop
        (it is loaded again each iteration and dies when the loop ends), so the tiles
        an epilogue loads after a loop never count with that loop's operands.  A
        stored tile is the value of an intermediate (tuning counts those apart).
        """
        outside = [(shape, before) for shape, loop, before in self.loads if loop is None]
        phases = [
            tuple(shape for shape, before in outside if before <= number)
            + tuple(shape for shape, loop, _ in self.loads if loop == number)
            for number in range(self.loops)
        ]
        return (*phases, tuple(shape for shape, _ in outside))

    def loop_groups(self) -> tuple[tuple[tuple[SymbolLike, ...], ...], ...]:
        """The shapes of the tiles loaded inside loops, one group per outermost loop.

        Software pipelining keeps copies of a loop's tiles in shared memory while
        that loop runs; loops one after another (attention's loop over whole key
        blocks, then its masked one) never hold theirs at once, and Triton's
        allocator lets the later loop's buffers reuse the earlier one's space.
        """
        return tuple(
            tuple(shape for shape, loop in self.loop_tiles if loop in (number, None))
            for number in range(self.loops)
        )

    def placeholder(self, node: ast.expr) -> Symbol:
        """A symbol standing for an application expression (a subscript)."""
        name = naming.placeholder(next(self._placeholder_ids))
        self._placeholders[name] = node
        return Symbol(name)

    def placed(self, value: SymbolLike) -> ast.expr | None:
        """The application expression ``value`` stands for, when it is one placeholder."""
        name = value.name if isinstance(value, Symbol) else None
        return None if name is None else self._placeholders.get(name)

    def footprint_mark(self) -> tuple[int, int, int, int]:
        """Where the footprint's records (tiles, loop tiles, loads, loops) end now."""
        return len(self.tiles), len(self.loop_tiles), len(self.loads), self.loops

    def forget_footprint(self, mark: tuple[int, int, int, int]) -> None:
        """Forget the records since ``mark``: code that copies code already counted (a
        loop's ragged tail, which never runs beside its whole iterations)."""
        tiles, loop_tiles, loads, self.loops = mark
        del self.tiles[tiles:], self.loop_tiles[loop_tiles:], self.loads[loads:]


def names_in(value: SymbolLike) -> set[str]:
    """The names an expression mentions (none for an int)."""
    return value.names() if isinstance(value, Symbol) else set()


def _renames(spec: KernelSpec) -> dict[str, SymbolLike]:
    """Source tensors' size and stride symbols -> the kernel's parameter names for them."""
    renames: dict[str, SymbolLike] = {}
    for parameter in spec.tensor_parameters:
        source = parameter.source
        for dim, size in enumerate(source.shape):
            if isinstance(size, Symbol) and size.name == source.size_string(dim):
                renames[size.name] = Symbol(
                    naming.size(parameter.name, dim),
                    constexpr=size.constexpr,
                    meta=size.meta,
                    upper_bound=size.upper_bound,
                    lower_bound=size.lower_bound,
                    power_of_two=size.power_of_two,
                )
        for dim in range(source.ndim):
            renames[source.stride_string(dim)] = Symbol(naming.stride(parameter.name, dim))
    return renames


class _Placeholders(ast.NodeTransformer):
    """Put application expressions back where placeholders stand."""

    def __init__(self, placeholders: dict[str, ast.expr]) -> None:
        self.placeholders = placeholders

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.placeholders:
            # Re-parse rather than deep-copy: nodes carry their namespaces (modules).
            return ast.parse(ast.unparse(self.placeholders[node.id]), mode="eval").body
        return node
