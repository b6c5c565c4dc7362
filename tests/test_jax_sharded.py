"""``nt_jax`` kernels inside ``shard_map`` over two devices equal one device's results.

The checks run in a child process (``tests/support/jax_sharded.py``): JAX
fixes its devices when it starts.  On the CPU it gets two host devices and
runs the kernels under Triton's interpreter; on a machine with two GPUs,
through jax-triton.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.processes import environment

pytest.importorskip("jax")

ON_GPU = os.environ.get("NT_TEST_GPU") == "1"
CASES = {"mm rows", "bmm batch", "silu", "user kernel"}


def _run(extra: dict[str, str]) -> dict:
    run = subprocess.run(  # noqa: S603 - our own test script
        [sys.executable, "-m", "support.jax_sharded"],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment(extra),
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _check(answer: dict, tolerance: float, explicit: bool = False) -> None:
    refused = answer.pop("eager on a sharded array")["error"]
    # Outside shard_map, an eager call on a sharded array is refused, naming the sharding.
    assert "sharded over 2 devices" in refused and "P('x', None)" in refused, refused
    assert "shard_map" in refused, refused
    # So is a kernel staged under jax.jit on arrays placed over the mesh, sharded or not.
    under_jit = answer.pop("jit outside shard_map")
    for name in ("mm rows", "user kernel replicated"):
        message = under_jit[name]
        assert "placed over 2 devices (mesh {'x': 2}" in message, (name, message)
        assert "jax.shard_map" in message and message.startswith("kernel '"), (name, message)
    assert "argument 'input'" in under_jit["mm rows"], under_jit
    # A mesh of explicit axes: the spec is known (required on the CPU's JAX; elsewhere
    # checked where the kernel was reached).
    if explicit or under_jit["mm explicit"].startswith("kernel '"):
        assert "sharded P('x', None)" in under_jit["mm explicit"], under_jit
    assert set(answer) == CASES
    for name, result in answer.items():
        assert result["difference"] <= tolerance, (name, result)
        assert result["devices"] == 2 and "x" in result["sharding"], (name, result)


@pytest.mark.interpreter_only  # two host devices, kernels under the interpreter
def test_kernels_inside_shard_map_over_two_cpu_devices_equal_one() -> None:
    extra = {
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "TRITON_INTERPRET": "1",
    }
    _check(_run(extra), 1e-4, explicit=True)


def _gpus() -> int:
    """GPUs visible, counted by torch when present: starting JAX's GPU backend in the test
    process would take most of every GPU's memory from the tests that follow."""
    if not ON_GPU:
        return 0
    try:
        import torch
    except ImportError:
        return 2  # the child says if it has fewer
    return int(torch.cuda.device_count())


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
@pytest.mark.skipif(ON_GPU and _gpus() < 2, reason="needs two GPUs")
def test_kernels_inside_shard_map_over_two_gpus_equal_one() -> None:
    # mm and bmm take TF32 on the GPU: within 5e-2 of the exact product of these sizes
    # (sums of 40 products of unit normals), where a wrong shard is off by units.
    _check(_run({"JAX_PLATFORMS": "cuda"}), 5e-2)
