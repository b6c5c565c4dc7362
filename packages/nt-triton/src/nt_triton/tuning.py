"""The auto-tuning space: configurations from the meta symbols' bounds.

Each meta symbol takes the powers of two between its bounds.  The product of
those values is pruned by limits a GPU program can live with (the elements of
one tile, and of all tiles a program holds), crossed with ``num_warps`` and
``num_stages`` suited to the tile sizes, and cut to at most
``max_num_configs`` configurations that spread over the space.  Under
Triton's interpreter, where timing means nothing, the space shrinks to the
largest and smallest configuration, which keeps the tuning path exercised
without multiplying run time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ninetoothed.errors import CodegenError
from ninetoothed.ir import KernelSpec
from ninetoothed.symbol import (
    Symbol,
    SymbolLike,
    evaluate,
    is_power_of_two,
    next_power_of_two,
)
from nt_triton import knobs
from nt_triton.abi import KernelSignature
from nt_triton.codegen import TileFootprint

DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
"""Launch options where ``make`` gives none and tuning has nothing to choose."""

DEFAULT_LOWER_BOUND = 16
DEFAULT_UPPER_BOUND = 1024
MAX_TILE_ELEMENTS = 1 << 15
"""Elements of one tile: a 128 x 256 float32 accumulator."""

MAX_PROGRAM_ELEMENTS = 1 << 16
"""Elements of all tiles of one program together."""

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

    def kwargs(self) -> dict[str, int]:
        """Every constexpr value the configuration supplies to the kernel."""
        return {**self.values, **self.extra}


def symbol_values(symbol: Symbol) -> list[int]:
    """The values auto-tuning tries for ``symbol``: powers of two within its bounds."""
    lower = symbol.lower_bound if symbol.lower_bound is not None else DEFAULT_LOWER_BOUND
    upper = symbol.upper_bound if symbol.upper_bound is not None else DEFAULT_UPPER_BOUND
    values = []
    value = next_power_of_two(max(1, lower))
    while value <= upper:
        values.append(value)
        value *= 2
    if not values:
        raise CodegenError(f"meta symbol {symbol} has no power of two between {lower} and {upper}")
    return values


def launch_options(options: Mapping[str, Any]) -> tuple[int, int]:
    """``(num_warps, num_stages)`` from ``make``'s options, or the defaults."""
    return (
        int(options.get("num_warps") or DEFAULT_NUM_WARPS),
        int(options.get("num_stages") or DEFAULT_NUM_STAGES),
    )


def configurations(
    spec: KernelSpec, footprint: TileFootprint, signature: KernelSignature
) -> list[Configuration]:
    """The configurations to tune over (one, with defaults, when nothing is tuned).

    ``footprint`` gives the shapes of the tiles the kernel loads or stores, in
    terms of the symbols; sizes that depend on run-time values do not count
    toward the limits.
    """
    options = spec.options
    pinned = options.get("configs")
    if pinned is not None:
        return [_pinned(spec, entry, signature) for entry in pinned]
    meta = spec.meta_symbols
    if not meta:
        return [Configuration({}, *launch_options(options))]
    names = sorted(meta)
    candidates = _candidates(spec, names, footprint.tiles)
    result: list[Configuration] = []
    footprints: dict[int, int] = {}
    for values, largest in candidates:
        warps = [options["num_warps"]] if options.get("num_warps") else _warps(largest)
        stages = [options["num_stages"]] if options.get("num_stages") else _stages(footprint)
        pipelined = sum(_tile_elements(shape, values) for shape in footprint.loop_tiles)
        for warp_count, stage_count in itertools.product(warps, stages):
            if pipelined * ASSUMED_ELEMENT_BYTES * stage_count > SHARED_MEMORY_BYTES:
                continue  # the software pipeline's buffers would not fit
            extra = derived_meta_values(signature, values)
            result.append(Configuration(values, warp_count, stage_count, extra))
            footprints[id(result[-1])] = pipelined * stage_count
    if not result:
        raise CodegenError(
            f"{spec.name}: no configuration of {', '.join(names)} fits in shared memory "
            f"({SHARED_MEMORY_BYTES} bytes for {ASSUMED_ELEMENT_BYTES}-byte elements); "
            "lower the symbols' upper bounds"
        )
    limit = int(options.get("max_num_configs") or knobs.max_num_configs())
    chosen = _spread(result, limit)
    # Keep one configuration whose pipeline fits with 4-byte (float32) elements,
    # so that no dtype leaves the autotuner with nothing that runs.
    fits_widest = [
        c for c in result if footprints[id(c)] * WIDEST_ELEMENT_BYTES <= SHARED_MEMORY_BYTES
    ]
    if fits_widest and not any(c in fits_widest for c in chosen):
        chosen[-1 if len(chosen) > 1 else 0] = fits_widest[len(fits_widest) // 2]
    return chosen


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


def _candidates(
    spec: KernelSpec, names: list[str], tiles: Sequence[Sequence[SymbolLike]]
) -> list[tuple[dict[str, int], int]]:
    """Every combination of meta values within the tile limits, with its largest tile."""
    meta = spec.meta_symbols
    candidates = []
    for combination in itertools.product(*(symbol_values(meta[name]) for name in names)):
        values = dict(zip(names, combination))
        sizes = [_tile_elements(shape, values) for shape in tiles]
        largest = max(sizes, default=1)
        if largest > MAX_TILE_ELEMENTS or sum(sizes) > MAX_PROGRAM_ELEMENTS:
            continue
        candidates.append((values, largest))
    if not candidates:
        raise CodegenError(
            f"{spec.name}: every combination of {', '.join(names)} exceeds the tile limits "
            f"({MAX_TILE_ELEMENTS} elements a tile, {MAX_PROGRAM_ELEMENTS} a program); "
            "lower the symbols' upper bounds"
        )
    return candidates


def _warps(largest_tile: int) -> list[int]:
    """``num_warps`` worth trying for a program whose largest tile has that many elements."""
    return [4, 8] if largest_tile >= 4096 else [DEFAULT_NUM_WARPS]


def _stages(footprint: TileFootprint) -> list[int]:
    """``num_stages`` worth trying: more pipeline stages pay only in loops."""
    return [3, 4] if footprint.has_loop else [DEFAULT_NUM_STAGES]


def _pinned(
    spec: KernelSpec, entry: Mapping[str, Any], signature: KernelSignature
) -> Configuration:
    values = {k: v for k, v in entry.items() if k not in ("num_warps", "num_stages")}
    missing = set(spec.meta_symbols) - set(values)
    unknown = set(values) - set(spec.meta_symbols)
    if missing or unknown:
        raise CodegenError(
            f"{spec.name}: a pinned configuration must give exactly the meta symbols "
            f"{sorted(spec.meta_symbols)}; missing {sorted(missing)}, unknown {sorted(unknown)}"
        )
    odd = {k: v for k, v in values.items() if not is_power_of_two(v)}
    if odd:
        raise CodegenError(
            f"{spec.name}: meta symbols take powers of two (tiles are powers of two); the pinned "
            f"configuration gives {odd}"
        )
    num_warps, num_stages = launch_options(spec.options)
    return Configuration(
        values,
        int(entry.get("num_warps", num_warps)),
        int(entry.get("num_stages", num_stages)),
        derived_meta_values(signature, values),
    )


def _tile_elements(shape: Sequence[SymbolLike], values: Mapping[str, int]) -> int:
    elements = 1
    for size in shape:
        if isinstance(size, Symbol):
            if not size.names() <= set(values):
                continue
            size = next_power_of_two(int(evaluate(size, values)))
        elements *= max(1, int(size))
    return elements


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
