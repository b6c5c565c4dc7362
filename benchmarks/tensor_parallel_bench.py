"""Tokens per second of the tensor-parallel Llama block: ``nt_torch.ops`` against torch's.

    torchrun --standalone --nproc-per-node=2 benchmarks/tensor_parallel_bench.py [--quick]

Every rank builds its shard of one Llama decoder layer
(:mod:`tensor_parallel`; 8B dimensions: hidden 4096, 32 heads of 128, 8 key
and value heads, MLP 14336; ``--quick``: half of each), bfloat16, and times
a forward pass (prefill) and a forward and backward pass (training) of
``--batch`` sequences of ``--length`` tokens, with our ops and with torch's,
interleaved over ``--rounds`` rounds (medians).  The first calls (tuning,
compiling) are made before any timing.  Rank 0 prints one line per
measurement and a JSON summary (``--json PATH`` writes it too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tensor_parallel as tp  # noqa: E402

FULL = tp.Shape(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336)
QUICK = tp.Shape(hidden=2048, heads=16, kv_heads=4, head_dim=128, ffn=7168)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="half the 8B dimensions")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10, help="timed passes per round")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args(argv)


def _time(step, runs: int) -> float:  # type: ignore[no-untyped-def]
    """Milliseconds per run of ``step`` (CUDA events, after one untimed run)."""
    step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.barrier()
    start.record()
    for _ in range(runs):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / runs


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Measure; returns tokens/s per (ops, pass) on rank 0 (every rank measures)."""
    arguments = _parse(argv)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    shape, dtype = (QUICK if arguments.quick else FULL), torch.bfloat16
    weights = tp.full_weights(shape, dtype, device)
    x = torch.randn(arguments.batch, arguments.length, shape.hidden, dtype=dtype, device=device)
    tables = tp.rope_tables(arguments.length, shape.head_dim, dtype, device)
    steps = {}
    for ops in (tp.ours(), tp.torch_ops()):
        block = tp.block(shape, ops, weights, rank, world)

        def forward(block=block):  # type: ignore[no-untyped-def]
            with torch.no_grad():
                block(x, *tables)

        def training(block=block):  # type: ignore[no-untyped-def]
            block(x.requires_grad_(True), *tables).sum().backward()

        steps[f"{ops.name} forward"] = forward
        steps[f"{ops.name} forward+backward"] = training
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(arguments.rounds):
        for name, step in steps.items():
            times[name].append(_time(step, arguments.runs))
    tokens = arguments.batch * arguments.length
    summary = {name: tokens / (statistics.median(ms) / 1e3) for name, ms in times.items()}
    if rank == 0:
        print(f"{world} ranks, {shape}, batch {arguments.batch} x {arguments.length} tokens, bf16")
        for name, rate in summary.items():
            print(f"{name:32} {rate:12.0f} tokens/s  ({statistics.median(times[name]):.3f} ms)")
        for kind in ("forward", "forward+backward"):
            ratio = summary[f"ninetoothed {kind}"] / summary[f"torch {kind}"]
            print(f"ninetoothed / torch, {kind}: {ratio:.3f}")
        text = json.dumps({"world": world, "shape": str(shape), "tokens_per_s": summary})
        print(text)
        if arguments.json is not None:
            arguments.json.write_text(text)
    dist.destroy_process_group()
    return summary


if __name__ == "__main__":
    main()
