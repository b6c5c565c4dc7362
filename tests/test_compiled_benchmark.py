"""``benchmarks/compiled.py``'s timing: variants with code objects of their own, and
floors read from the loop clock (its GPU runs need a GPU: the CPU's clock here)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from support.blocks import torch_block
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import compiled  # noqa: E402 - the benchmarks folder is on the path from here
import measure  # noqa: E402


def test_each_compiled_variant_has_a_cache_of_its_own() -> None:
    """Two variants of one function, each with one entry; none on the original."""
    args = (torch.randn(8, 16), torch.randn(16), torch.randn(16, 16))
    torch._dynamo.reset()
    first = compiled.compiled(torch_block, "default", backend="eager")
    second = compiled.compiled(torch_block, "other", backend="eager")
    torch.testing.assert_close(first(*args), torch_block(*args))
    torch.testing.assert_close(second(*args), torch_block(*args))
    codes = [f._torchdynamo_orig_callable.__code__ for f in (first, second)]
    assert codes[0] is not codes[1]
    assert [len(_debug_get_cache_entry_list(code)) for code in codes] == [1, 1]
    assert _debug_get_cache_entry_list(torch_block.__code__) == []
    assert codes[0].co_name == "torch_block_default"
    torch._dynamo.reset()


def test_a_copy_keeps_defaults_keywords_and_closure() -> None:
    scale = 3

    def function(x: int, y: int = 2, *, z: int = 5) -> int:
        return (x + y + z) * scale

    copy = measure.own_code(function, "copy")
    assert copy.__code__ is not function.__code__
    assert copy(1) == function(1) == 24
    assert copy(1, 1, z=1) == function(1, 1, z=1)


def test_the_loop_clock_times_a_loop_of_calls_per_call() -> None:
    calls: list[int] = []
    clock = measure.LoopClock("cpu", calls=50, warmup=3)
    assert clock.median_ms(lambda: calls.append(1)) >= 0
    assert len(calls) == 53


def test_the_floors_are_read_from_the_loop_and_both_clocks_are_shown() -> None:
    names = {
        name
        for _, numerator, denominator, _ in compiled.FLOORS
        for name in (numerator, denominator)
    }
    loop = dict.fromkeys(names, 10.0)
    bench = dict.fromkeys(names, 10.0)
    loop["ours, reduce-overhead"] = 12.0  # 1.2 by the loop, met by do_bench alone
    text = compiled.floor_table({"loop": loop, "do_bench": bench}, 3)
    row = next(line for line in text.splitlines() if line.startswith("| reduce-overhead ours"))
    assert row == "| reduce-overhead ours / reduce-overhead torch | 1.200 | 1.000 | 1.10 | NO |"
