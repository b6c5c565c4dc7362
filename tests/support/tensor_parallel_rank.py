"""One rank of the tensor-parallel Llama block's checks (``tests/test_tensor_parallel.py``).

``python -m support.tensor_parallel_rank RANK WORLD BARRIER BACKEND OUT`` on the
CPU (gloo, a file rendezvous in ``BARRIER``; run by
:func:`support.processes.run_processes`), or under ``torchrun`` on the GPUs
(NCCL; ``RANK`` and ``WORLD_SIZE`` from its environment, ``cuda:LOCAL_RANK``).
``BACKEND`` is the ``torch.compile`` backend of the compiled run.

Each rank computes the whole block on its own (the single-device reference,
from the same seed), then its shard of the tensor-parallel block, eager and
compiled, forward and backward, and compares: the output, the input's
gradient and every weight's gradient against the matching part of the
reference's.  It writes its answer (the largest differences, and whether they
are within tolerance) to ``OUT/rank<RANK>.json`` and prints it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

from support.processes import TESTS, wait_for_the_others

sys.path.insert(0, str(TESTS.parent / "benchmarks"))

import tensor_parallel as tp  # noqa: E402

SHAPE = tp.Shape(hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128)
BATCH, LENGTH = 2, 8


def _join(argv: list[str]) -> tuple[int, int, torch.device]:
    """Join the job's process group; returns (rank, world, this rank's device)."""
    import torch.distributed as dist

    if "LOCAL_RANK" in os.environ:  # under torchrun, on the GPUs
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
        return rank, world, device
    rank, world, barrier = int(argv[0]), int(argv[1]), Path(argv[2])
    dist.init_process_group(
        "gloo", init_method=f"file://{barrier / 'rendezvous'}", rank=rank, world_size=world
    )
    wait_for_the_others(rank, barrier)
    return rank, world, torch.device("cpu")


def _run(
    model: Any, x: torch.Tensor, tables: tuple[torch.Tensor, ...], grad: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Forward and backward; the output and every gradient by name."""
    x = x.detach().clone().requires_grad_(True)
    y = model(x, *tables)
    y.backward(grad)
    results = {"output": y.detach(), "input": x.grad}
    results.update(
        {name.removeprefix("_orig_mod."): p.grad for name, p in model.named_parameters()}
    )
    return results


def _differences(
    got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], rank: int, world: int
) -> dict[str, float]:
    """The largest relative difference per result (shards against the reference's parts)."""
    differences = {}
    for name, value in got.items():
        expected = tp.shard(name, want[name], rank, world)
        scale = expected.abs().max().clamp_min(1e-6)
        differences[name] = float((value - expected).abs().max() / scale)
    return differences


def main(argv: list[str]) -> None:
    rank, world, device = _join(argv)
    backend, out = argv[3], Path(argv[4])
    dtype = torch.float32
    ops = tp.ours()
    weights = tp.full_weights(SHAPE, dtype, device)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, LENGTH, SHAPE.hidden, generator=generator).to(device)
    grad = torch.randn(BATCH, LENGTH, SHAPE.hidden, generator=generator).to(device)
    tables = tp.rope_tables(LENGTH, SHAPE.head_dim, dtype, device)
    reference = _run(tp.block(SHAPE, ops, weights), x, tables, grad)
    eager = _run(tp.block(SHAPE, ops, weights, rank, world), x, tables, grad)
    compiled_block = tp.block(SHAPE, ops, weights, rank, world)
    compiled = _run(
        torch.compile(compiled_block, backend=backend, fullgraph=False), x, tables, grad
    )
    baseline = _run(tp.block(SHAPE, tp.torch_ops(), weights), x, tables, grad)
    tolerance = 1e-4 if device.type == "cpu" else 2e-2  # TF32 on the GPU
    answer: dict[str, Any] = {
        "rank": rank,
        "world": world,
        "eager": _differences(eager, reference, rank, world),
        "compiled": _differences(compiled, reference, rank, world),
        "torch_ops": _differences(baseline, reference, 0, 1),
        "tolerance": tolerance,
    }
    answer["close"] = all(
        value <= tolerance
        for part in ("eager", "compiled", "torch_ops")
        for value in answer[part].values()
    )
    torch.distributed.destroy_process_group()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{rank}.json").write_text(json.dumps(answer))
    print(json.dumps(answer))


if __name__ == "__main__":
    main(sys.argv[1:])
