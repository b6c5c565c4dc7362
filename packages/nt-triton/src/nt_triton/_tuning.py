"""The auto-tuning space: configurations from the meta symbols' bounds.

Each meta symbol takes the powers of two between its bounds, or, declared
``power_of_two=False`` (as upstream), every integer between them (tiles of
such sizes are padded and masked; long ranges are thinned evenly when the
combinations exceed :data:`MAX_COMBINATIONS`).  Every tile a
program holds is sized with the meta values and, for the other symbols, at
their ``upper_bound`` (padded-size placeholders resolved to the power of two
of what they pad); a program also holds intermediates, counted as the
largest ``dot`` result two loaded tiles can make (the BM x BN accumulator)
or the largest stored tile, in 32-bit registers.  Registers are counted at
the program's peak: tiles a loop loads die when it ends, so an epilogue's
tiles (``addmm``'s ``input``, loaded after the loop over ``k``) never count
with the loop's operands (``TileFootprint.phases``).  Combinations are pruned by
the elements of one tile, registers per thread (for each ``num_warps``) and
the shared memory the software pipeline needs (for each ``num_stages``);
``num_warps``/``num_stages`` given to ``make`` as ints pin them, as tuples
are tuned over.  The rest is cut to at most ``max_num_configs``
configurations spread over the space, ordered with the middle of the space
first and then by size (the largest tile, the likeliest to spill or compile
slowly, is never first).  At call time :func:`fits` checks each
configuration again with the call's dtypes and constexpr values.  Under
Triton's interpreter the space shrinks to two configurations, and the tuner
picks one without running any (:mod:`nt_triton.tuner`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ninetoothed.arrangement.symbol import (
    Symbol,
    SymbolLike,
    evaluate,
    is_power_of_two,
    next_power_of_two,
    takes_powers_of_two,
)
from ninetoothed.errors import CodegenError
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import knobs
from nt_triton._abi import KernelSignature
from nt_triton._codegen.meta_values import symbol_values
from nt_triton._codegen.product import TileFootprint

__all__ = [
    "ASSUMED_ELEMENT_BYTES",
    "Configuration",
    "DEFAULT_NUM_STAGES",
    "DEFAULT_NUM_WARPS",
    "INTERMEDIATE_BYTES",
    "MAX_COMBINATIONS",
    "MAX_PROGRAM_ELEMENTS",
    "MAX_REGISTERS",
    "MAX_TILE_ELEMENTS",
    "SHARED_MEMORY_BYTES",
    "Sizing",
    "Tiles",
    "WIDEST_ELEMENT_BYTES",
    "configuration_limit",
    "configurations",
    "derived_meta_values",
    "fits",
    "launch_options",
    "listing",
    "maxnreg_values",
    "option_values",
]

DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
"""Launch options where ``make`` gives none and tuning has nothing to choose."""

MAX_TILE_ELEMENTS = 1 << 15
"""Elements of one tile: a 128 x 256 float32 accumulator."""

MAX_COMBINATIONS = 1 << 12
"""Combinations of meta values sized at ``make`` (see :func:`_thinned`)."""

MAX_PROGRAM_ELEMENTS = 1 << 17
"""Elements of all tiles of one program together."""

MAX_REGISTERS = 255
"""32-bit registers a thread may use (the hardware's limit): more spills to local memory,
and the compile time grows with the program (a 256 x 256 float32 accumulator on 4
warps took 18 s in LLVM and spilled)."""

INTERMEDIATE_BYTES = 4
"""Intermediates (dot accumulators) are float32."""

SHARED_MEMORY_BYTES = 220 * 1024
"""Shared memory a program may use: Hopper's 227 KiB less headroom for Triton's own."""

ASSUMED_ELEMENT_BYTES = 2
"""Element size assumed when estimating shared memory (dtypes are known only at call
time); configurations that do not fit the actual dtype are skipped by Triton's
autotuner, and the space always keeps one that fits 4-byte elements."""

WIDEST_ELEMENT_BYTES = 4


@dataclass(frozen=True)
class Configuration:
    """Values for the meta symbols, plus launch options."""

    values: Mapping[str, int]
    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int = DEFAULT_NUM_STAGES
    extra: Mapping[str, int] = field(default_factory=dict)
    """Padded tile sizes that depend on meta symbols (derived, not tuned)."""
    maxnreg: int | None = None
    """Triton's cap on registers per thread (None: the compiler's choice).  A program
    that needs a few registers more than a round share of the register file gets
    one resident program fewer per SM; the cap trades them for occupancy (our
    attention at 64 x 64 with 4 warps: 138 registers, 3 programs per SM; capped
    at 128, 4 programs and 4% faster on an H100)."""

    def kwargs(self) -> dict[str, int]:
        """Every constexpr value the configuration supplies to the kernel."""
        return {**self.values, **self.extra}


def option_values(options: Mapping[str, Any], name: str) -> list[int] | None:
    """``num_warps`` or ``num_stages`` from ``make``: an int, or an iterable tuned over."""
    value = options.get(name)
    if value is None:
        return None
    values = (
        [int(v) for v in value] if isinstance(value, (tuple, list, set, range)) else [int(value)]
    )
    if not values or any(v < 1 for v in values):
        raise CodegenError(
            f"{name} must be a positive int or a non-empty tuple of them, got {value!r}"
        )
    return sorted(set(values)) if isinstance(value, set) else list(dict.fromkeys(values))


def maxnreg_values(options: Mapping[str, Any]) -> list[int | None]:
    """``maxnreg`` from ``make``: the register caps tuned over (``[None]``: no cap)."""
    value = options.get("maxnreg")
    if value is None:
        return [None]
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    return list(dict.fromkeys(None if v is None else int(v) for v in values))


def launch_options(options: Mapping[str, Any]) -> tuple[int, int]:
    """``(num_warps, num_stages)`` of a launch that skips tuning (the first of a tuple)."""
    warps = option_values(options, "num_warps")
    stages = option_values(options, "num_stages")
    return (warps[0] if warps else DEFAULT_NUM_WARPS, stages[0] if stages else DEFAULT_NUM_STAGES)


def configurations(
    spec: KernelSpec,
    footprint: TileFootprint,
    signature: KernelSignature,
    uses_dot: bool = False,
) -> list[Configuration]:
    """The configurations to tune over (one, with defaults, when nothing is tuned).

    ``footprint`` gives the shapes of the tiles the kernel loads or stores, in
    terms of the symbols; ``uses_dot`` says the application multiplies tiles
    (its accumulators count as intermediates).
    """
    options = spec.options
    pinned = options.get("configs")
    if pinned is not None:
        return [_pinned(spec, entry, signature) for entry in pinned]
    warps_given = option_values(options, "num_warps")
    stages_given = option_values(options, "num_stages")
    meta = spec.meta_symbols
    if not meta:
        warps = warps_given or [DEFAULT_NUM_WARPS]
        stages = stages_given or [DEFAULT_NUM_STAGES]
        caps = maxnreg_values(options)
        return [
            Configuration({}, w, s, maxnreg=r) for w, s, r in itertools.product(warps, stages, caps)
        ]
    names = sorted(meta)
    sizing = Sizing(signature, footprint, uses_dot)
    result: list[Configuration] = []
    for values in _candidates(spec, names, sizing):
        extra = derived_meta_values(signature, values)
        tiles = sizing.tiles({**values, **extra})
        largest = max(tiles.loaded + tiles.stored, default=1)
        warps = warps_given or _warps(largest)
        stages = stages_given or _stages(footprint)
        for warp_count, stage_count in itertools.product(warps, stages):
            if tiles.fits(ASSUMED_ELEMENT_BYTES, warp_count, stage_count):
                result.append(Configuration(values, warp_count, stage_count, extra))
    if not result:
        raise CodegenError(
            f"{spec.label}: no configuration of {', '.join(names)} fits a GPU program "
            f"({MAX_REGISTERS} registers a thread, {SHARED_MEMORY_BYTES} bytes of shared memory "
            f"for {ASSUMED_ELEMENT_BYTES}-byte elements, sizes at their upper bounds); lower the "
            "symbols' upper bounds"
        )
    limit = configuration_limit(options)
    # Each cap is tried with every configuration kept (the cap cannot be estimated:
    # whether it spills is the compiler's to say, and the tuner measures it).
    return [
        dataclasses.replace(config, maxnreg=cap)
        for config in _order(_spread(result, limit), sizing)
        for cap in maxnreg_values(options)
    ]


def configuration_limit(options: Mapping[str, Any]) -> int:
    """The most tile configurations a generated space keeps (``max_num_configs``)."""
    return int(options.get("max_num_configs") or knobs.max_num_configs())


@dataclass(frozen=True)
class Tiles:
    """Elements of the tiles one program holds, for one configuration."""

    loaded: tuple[int, ...]
    stored: tuple[int, ...]
    pipelined: int
    """Elements loaded inside loops (``num_stages`` copies live in shared memory)."""
    intermediate: int
    """Elements of the largest float32 intermediate (a dot's accumulator, or a stored tile)."""
    phases: tuple[int, ...] = ()
    """Elements of the loaded tiles live together, per phase (see
    ``TileFootprint.phases``); empty: every tile of ``loaded`` at once."""

    def registers(self, element_bytes: int, num_warps: int) -> float:
        """Estimated 32-bit registers per thread at the program's peak: its largest
        phase's loaded tiles, and the intermediate (which lives through every phase)."""
        held = max(self.phases, default=sum(self.loaded)) * element_bytes
        return (held + self.intermediate * INTERMEDIATE_BYTES) / 4 / (32 * num_warps)

    def fits(self, element_bytes: int, num_warps: int, num_stages: int) -> bool:
        """Whether a program of these tiles fits the registers, shared memory and tile limits."""
        if max(self.loaded + self.stored, default=1) > MAX_TILE_ELEMENTS:
            return False
        if sum(self.loaded) + sum(self.stored) > MAX_PROGRAM_ELEMENTS:
            return False
        if self.registers(element_bytes, num_warps) > MAX_REGISTERS:
            return False
        return self.pipelined * element_bytes * num_stages <= SHARED_MEMORY_BYTES


class Sizing:
    """Sizes a kernel's tiles for given symbol values, other symbols at their bounds."""

    def __init__(self, signature: KernelSignature, footprint: TileFootprint, uses_dot: bool):
        self.footprint = footprint
        self.uses_dot = uses_dot
        self.padded = {
            p.name: p.expression for p in signature.parameters if p.expression is not None
        }
        # Sizing a space evaluates the same few expressions thousands of times with
        # the same values of the symbols they depend on: memoised per expression on
        # those values (make's cost was mostly here).
        self._depends: dict[int, tuple[Symbol, tuple[str, ...]]] = {}
        self._sizes: dict[tuple[Any, ...], int] = {}
        self._shape_names: dict[int, tuple[Sequence[SymbolLike], tuple[str, ...]]] = {}
        self._elements: dict[tuple[Any, ...], int] = {}

    def _names(self, size: Symbol) -> tuple[str, ...]:
        """The symbols ``size`` depends on, through padded-size placeholders too."""
        entry = self._depends.get(id(size))
        if entry is None:
            names: set[str] = set()
            pending = [size]
            while pending:
                for name in pending.pop().free_symbols:
                    expression = self.padded.get(name)
                    if name not in names and isinstance(expression, Symbol):
                        pending.append(expression)
                    names.add(name)
            entry = self._depends[id(size)] = (size, tuple(sorted(names)))
        return entry[1]

    def size(self, size: SymbolLike, values: Mapping[str, int]) -> int:
        """One tile dimension's (power-of-two) extent."""
        if not isinstance(size, Symbol):
            return next_power_of_two(max(1, int(size)))
        key = (id(size), *(values.get(name) for name in self._names(size)))
        extent = self._sizes.get(key)
        if extent is None:
            extent = self._sizes[key] = self._size(size, values)
        return extent

    def _size(self, size: Symbol, values: Mapping[str, int]) -> int:
        known = dict(values)
        for name, symbol in size.free_symbols.items():
            if name in known:
                continue
            expression = self.padded.get(name)
            if expression is not None:
                known[name] = self.size(expression, values)
            elif symbol.upper_bound is not None:
                known[name] = int(symbol.upper_bound)
            else:
                known[name] = 1  # unbounded (run-time or constexpr): sized at call time
        return next_power_of_two(max(1, int(evaluate(size, known))))

    def elements(self, shape: Sequence[SymbolLike], values: Mapping[str, int]) -> int:
        """A tile's element count (memoised like :meth:`size`, per shape)."""
        names = self._shape_names.get(id(shape))
        if names is None:
            found = {n for size in shape if isinstance(size, Symbol) for n in self._names(size)}
            names = self._shape_names[id(shape)] = (shape, tuple(sorted(found)))
        key = (id(shape), *(values.get(name) for name in names[1]))
        elements = self._elements.get(key)
        if elements is None:
            elements = 1
            for size in shape:
                elements *= self.size(size, values)
            self._elements[key] = elements
        return elements

    def tiles(self, values: Mapping[str, int]) -> Tiles:
        """The tiles of one configuration (``values``: meta values, derived padded sizes,
        and at call time the constexpr values)."""
        footprint = self.footprint
        shapes = footprint.tiles
        loaded = tuple(self.elements(shape, values) for shape in shapes)
        groups = footprint.loop_groups or (footprint.loop_tiles,)
        pipelined = max(sum(self.elements(shape, values) for shape in group) for group in groups)
        stored = loaded  # the footprint does not tell loads from stores: count each once
        intermediate = 0
        if self.uses_dot:
            extents = [
                tuple(self.size(size, values) for size in shape)
                for shape in shapes
                if len(shape) >= 2
            ]
            for i, a in enumerate(extents):
                for j, b in enumerate(extents):
                    if i != j:
                        intermediate = max(intermediate, a[-2] * b[-2], a[-2] * b[-1])
        phases = tuple(
            sum(self.elements(shape, values) for shape in phase) for phase in footprint.phases
        )
        largest = max(intermediate, max(stored, default=0))
        return Tiles(loaded, (), pipelined, largest, phases)


def fits(
    configuration: Configuration,
    sizing: Sizing,
    values: Mapping[str, int],
    element_bytes: int,
) -> bool:
    """Whether ``configuration`` fits with a call's constexpr ``values`` and element size."""
    tiles = sizing.tiles({**values, **configuration.kwargs()})
    return tiles.fits(element_bytes, configuration.num_warps, configuration.num_stages)


def derived_meta_values(signature: KernelSignature, values: Mapping[str, int]) -> dict[str, int]:
    """The padded tile sizes that follow from meta values (kernel parameters tuning supplies).

    A tile size that depends on meta symbols and is not a known power of two
    is padded to the next one; each configuration, or the caller's pinned
    values, supply it with the meta symbols themselves.
    """
    extra = {}
    for parameter in signature.meta:
        size = parameter.expression
        if isinstance(size, Symbol) and size.names() <= set(values):
            extra[parameter.name] = next_power_of_two(int(evaluate(size, values)))
    return extra


def listing(configurations: Sequence[Configuration]) -> str:
    """The configurations as comment lines, for the cached source file."""
    lines = "\n".join(
        f"#   {dict(c.kwargs())}, num_warps={c.num_warps}, num_stages={c.num_stages}"
        for c in configurations
    )
    return f"# Auto-tuning configurations ({len(configurations)}):\n{lines}\n"


def _candidates(spec: KernelSpec, names: list[str], sizing: Sizing) -> list[dict[str, int]]:
    """Every combination of meta values within the tile limits."""
    meta = spec.meta_symbols
    candidates = []
    lists = _thinned(
        [symbol_values(meta[name]) for name in names],
        [not takes_powers_of_two(meta[name]) for name in names],
        MAX_COMBINATIONS,
    )
    for combination in itertools.product(*lists):
        values = dict(zip(names, combination))
        tiles = sizing.tiles(values)
        sizes = tiles.loaded
        if max(sizes, default=1) > MAX_TILE_ELEMENTS or sum(sizes) > MAX_PROGRAM_ELEMENTS:
            continue
        candidates.append(values)
    if not candidates:
        raise CodegenError(
            f"{spec.label}: every combination of {', '.join(names)} exceeds the tile limits "
            f"({MAX_TILE_ELEMENTS} elements a tile, {MAX_PROGRAM_ELEMENTS} a program); "
            "lower the symbols' upper bounds"
        )
    return candidates


def _thinned(lists: list[list[int]], thinnable: list[bool], limit: int) -> list[list[int]]:
    """The values of each symbol, the longest ``thinnable`` lists (every integer between
    the bounds, of symbols declared ``power_of_two=False``) evenly thinned, ends kept,
    until the combinations number at most ``limit`` (or none has more than two values):
    the space is cut to ``max_num_configs`` anyway, and sizing a million combinations
    would take ``make`` most of a minute.  Powers of two are never thinned."""
    lists = [list(values) for values in lists]
    while math.prod(len(values) for values in lists) > limit:
        longest = max((v for v, t in zip(lists, thinnable) if t), key=len, default=[])
        if len(longest) <= 2:
            break
        kept = max(2, len(longest) // 2)
        step = (len(longest) - 1) / (kept - 1)
        longest[:] = sorted({longest[round(i * step)] for i in range(kept)})
    return lists


def _warps(largest_tile: int) -> list[int]:
    """``num_warps`` worth trying for a program whose largest tile has that many elements."""
    return [4, 8] if largest_tile >= 4096 else [DEFAULT_NUM_WARPS]


def _stages(footprint: TileFootprint) -> list[int]:
    """``num_stages`` worth trying: more pipeline stages pay only in loops."""
    return [3, 4] if footprint.has_loop else [DEFAULT_NUM_STAGES]


def _pinned(
    spec: KernelSpec, entry: Mapping[str, Any], signature: KernelSignature
) -> Configuration:
    values = {k: v for k, v in entry.items() if k not in ("num_warps", "num_stages", "maxnreg")}
    missing = set(spec.meta_symbols) - set(values)
    unknown = set(values) - set(spec.meta_symbols)
    if missing or unknown:
        raise CodegenError(
            f"{spec.label}: a pinned configuration must give exactly the meta symbols "
            f"{sorted(spec.meta_symbols)}; missing {sorted(missing)}, unknown {sorted(unknown)}"
        )
    meta = spec.meta_symbols
    odd = {
        k: v
        for k, v in values.items()
        if not (is_power_of_two(v) or (not takes_powers_of_two(meta[k]) and _positive_int(v)))
    }
    if odd:
        raise CodegenError(
            f"{spec.label}: meta symbols take powers of two (tiles are powers of two; a symbol "
            f"declared power_of_two=False takes any positive int); the pinned configuration "
            f"gives {odd}"
        )
    num_warps, num_stages = launch_options(spec.options)
    return Configuration(
        values,
        int(entry.get("num_warps", num_warps)),
        int(entry.get("num_stages", num_stages)),
        derived_meta_values(signature, values),
        entry.get("maxnreg", maxnreg_values(spec.options)[0]),
    )


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _spread(configs: list[Configuration], limit: int) -> list[Configuration]:
    """At most ``limit`` configurations, evenly spaced in order of tile size."""
    if len(configs) <= limit:
        return configs
    ordered = sorted(
        configs,
        key=lambda c: (sum(math.log2(v) for v in c.values.values()), c.num_warps, c.num_stages),
        reverse=True,
    )
    if limit == 1:
        # One configuration: the middle of the space, not its largest tile,
        # which is the likeliest to spill or to compile slowly.
        return [ordered[len(ordered) // 2]]
    step = (len(ordered) - 1) / (limit - 1)
    return [ordered[round(i * step)] for i in range(limit)]


def _order(configs: list[Configuration], sizing: Sizing) -> list[Configuration]:
    """The middle of the space first (a usable result early), then smallest to largest."""
    if len(configs) <= 2:
        return configs

    def weight(c: Configuration) -> tuple[float, int, int]:
        tiles = sizing.tiles(c.kwargs())
        return (tiles.registers(ASSUMED_ELEMENT_BYTES, c.num_warps), c.num_warps, c.num_stages)

    ordered = sorted(configs, key=weight)
    middle = ordered.pop(len(ordered) // 2)
    return [middle, *ordered]
