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
    evaluate_with,
    is_power_of_two,
    next_power_of_two,
)
from nt_triton import knobs
from nt_triton.codegen import PaddedSize

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
    num_warps: int = 4
    num_stages: int = 3
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


def configurations(
    spec: KernelSpec,
    tile_shapes: Sequence[Sequence[SymbolLike]],
    padded: Sequence[PaddedSize],
    has_loop: bool,
    loop_tiles: Sequence[Sequence[SymbolLike]] = (),
) -> list[Configuration]:
    """The configurations to tune over (one, with defaults, when nothing is tuned).

    ``tile_shapes`` are the shapes of the tiles the kernel loads or stores, in
    terms of the symbols; sizes that depend on run-time values do not count
    toward the limits.
    """
    options = spec.options
    pinned = options.get("configs")
    if pinned is not None:
        return [_pinned(spec, entry, padded) for entry in pinned]
    num_warps = options.get("num_warps")
    num_stages = options.get("num_stages")
    meta = spec.meta_symbols
    if not meta:
        return [Configuration({}, num_warps or 4, num_stages or 3)]
    names = sorted(meta)
    candidates = []
    for combination in itertools.product(*(symbol_values(meta[name]) for name in names)):
        values = dict(zip(names, combination))
        sizes = [_tile_elements(shape, values) for shape in tile_shapes]
        largest = max(sizes, default=1)
        if largest > MAX_TILE_ELEMENTS or sum(sizes) > MAX_PROGRAM_ELEMENTS:
            continue
        candidates.append((values, largest, sum(sizes)))
    if not candidates:
        raise CodegenError(
            f"{spec.name}: every combination of {', '.join(names)} exceeds the tile limits "
            f"({MAX_TILE_ELEMENTS} elements a tile, {MAX_PROGRAM_ELEMENTS} a program); "
            "lower the symbols' upper bounds"
        )
    result = []
    footprints: dict[int, int] = {}
    for values, largest, _total in candidates:
        warps = [num_warps] if num_warps else ([4, 8] if largest >= 4096 else [4])
        stages = [num_stages] if num_stages else ([3, 4] if has_loop else [3])
        pipelined = sum(_tile_elements(shape, values) for shape in loop_tiles)
        for warp_count, stage_count in itertools.product(warps, stages):
            if pipelined * ASSUMED_ELEMENT_BYTES * stage_count > SHARED_MEMORY_BYTES:
                continue  # the software pipeline's buffers would not fit
            result.append(Configuration(values, warp_count, stage_count, _derived(padded, values)))
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


def _pinned(
    spec: KernelSpec, entry: Mapping[str, Any], padded: Sequence[PaddedSize]
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
    return Configuration(
        values,
        int(entry.get("num_warps", spec.options.get("num_warps") or 4)),
        int(entry.get("num_stages", spec.options.get("num_stages") or 3)),
        _derived(padded, values),
    )


def _derived(padded: Sequence[PaddedSize], values: Mapping[str, int]) -> dict[str, int]:
    extra = {}
    for size in padded:
        if isinstance(size.size, Symbol) and size.size.names() <= set(values):
            extra[size.name] = next_power_of_two(int(evaluate_with(size.size, values)))  # type: ignore[arg-type]
    return extra


def _tile_elements(shape: Sequence[SymbolLike], values: Mapping[str, int]) -> int:
    elements = 1
    for size in shape:
        if isinstance(size, Symbol):
            if not size.names() <= set(values):
                continue
            size = next_power_of_two(int(evaluate_with(size, values)))  # type: ignore[arg-type]
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
