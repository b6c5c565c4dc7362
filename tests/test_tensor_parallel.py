"""A tensor-parallel Llama block from ``nt_torch.ops`` equals the single-device block.

The block (``benchmarks/tensor_parallel.py``) is sharded over 2 ranks: column-
and row-parallel projections, one all-reduce after each row-parallel one.
Each rank (``tests/support/tensor_parallel_rank.py``) compares its output and
gradients, eager and under ``torch.compile``, with the whole block computed
alone.  On the CPU the ranks talk through gloo and the kernels run under
Triton's interpreter; on a machine with two GPUs ``torchrun`` starts them on
NCCL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.processes import environment, run_processes

CHILD = "support.tensor_parallel_rank"
ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"


def _check(answers: list[dict]) -> None:
    assert [a["rank"] for a in answers] == [0, 1]
    for answer in answers:
        # Within tolerance: the shards (eager and compiled) against the whole block,
        # and the torch-ops block (the benchmark's baseline) against ours.
        assert answer["close"], json.dumps(answer, indent=1)
        assert set(answer["eager"]) >= {"output", "input", "wq", "wo", "w_down"}


@pytest.mark.interpreter_only  # CPU tensors through the interpreter; the GPU run is below
def test_two_ranks_over_gloo_equal_one_eager_and_compiled(tmp_path: Path) -> None:
    out = tmp_path / "out"
    extra = {"GLOO_SOCKET_IFNAME": "lo", "NINETOOTHED_CACHE_DIR": str(tmp_path / "cache")}
    answers = run_processes(
        CHILD, 2, tmp_path / "barrier", ["aot_eager", str(out)], extra=extra, timeout=600
    )
    _check(answers)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
@pytest.mark.skipif(ON_GPU and torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_ranks_over_nccl_under_torchrun_equal_one_eager_and_compiled(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    command += ["-m", CHILD, "0", "2", str(tmp_path), "inductor", str(out)]
    run = subprocess.run(  # noqa: S603 - our own test script
        command,
        capture_output=True,
        text=True,
        timeout=600,
        # The ranks tune their kernels together too: no collective of it may hang.
        env=environment({"NINETOOTHED_TUNE_TOGETHER": "1"}),
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:] + run.stdout[-2000:]
    _check([json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)])
