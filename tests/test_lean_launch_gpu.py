"""The lean launcher on a GPU: the same results as Triton's launcher, bit for bit.

Triton kernels bound directly (a two- and three-dimensional grid, pointers,
i32, i64 and fp32 scalars, a bool, an int specialised to 1) launch through
both launchers in one process; library ops and made kernels run in two
processes, one with ``NINETOOTHED_C_LAUNCHER=off``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import lean_kernels
from support.base import ON_GPU

from nt_triton._launch import compiled

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def triton_36() -> None:
    if compiled.triton_version() != (3, 6):
        pytest.skip("the lean launcher applies to Triton 3.6's launcher convention")


def both_launches(
    function: Any,
    values: list[Any],
    pointers: dict[int, Any],
    order: tuple[str, ...],
    grid: tuple[int, int, int],
) -> tuple[Any, Any]:
    """The launch of one specialisation through Triton's launcher and through the lean one."""
    import triton

    parameters = [(name, name.isupper()) for name in function.arg_names]
    specialisation = compiled.specialise(parameters, values, pointers)
    target = triton.runtime.driver.active.get_current_target()
    binary = compiled.compile_kernel(function, specialisation, target, 4, 3)
    loaded = compiled.Loaded(binary, order)
    assert loaded.lean, "the lean launcher was not used (see the debug log of nt_triton)"
    bound = [values[i] for i, token in enumerate(order) if token.startswith("a")]
    lean_launch = loaded.bind(grid, bound)
    assert type(lean_launch).__name__ == "Launch"
    return loaded.bind_triton(grid, bound), lean_launch


def test_scalars_kernel_matches_tritons_launcher() -> None:
    import torch

    a = torch.randn(1000, device="cuda").half()
    results = []
    values = [a.data_ptr(), 1000, -7, 2**40 + 3, 0, 1.5, 1, 128]
    pointers = {0: ("fp16", True), 4: ("fp32", True)}
    order = ("p0", "a0", "p2", "p3", "p1", "p4", "p5", "a1")
    stream = torch.cuda.current_stream().cuda_stream
    for launch in both_launches(lean_kernels.scalars, values, pointers, order, (8, 1, 1)):
        b = torch.full((1000,), float("nan"), device="cuda")
        launch(stream, a.data_ptr(), b.data_ptr(), -7, 2**40 + 3, 1.5, 1)
        results.append(b)
    torch.cuda.synchronize()
    assert torch.equal(results[0].view(torch.int32), results[1].view(torch.int32))
    expected = a.double() * 1.5 - 7 + (2**40 + 3) + 1
    torch.testing.assert_close(results[1].double(), expected, rtol=1e-6, atol=0)


def test_two_and_three_dimensional_grids_match_tritons_launcher() -> None:
    import torch

    source = torch.randn(33, 80, device="cuda")
    values = [source.data_ptr(), 33, 70, 80, 0, 96, True, 16, 32]
    pointers = {0: ("fp32", True), 4: ("fp32", True)}
    order = ("p0", "a0", "a1", "a2", "p1", "p2", "p3", "a3", "a4")
    stream = torch.cuda.current_stream().cuda_stream
    for grid in ((3, 3, 1), (3, 3, 2)):
        for negate in (True, False):
            results = []
            for launch in both_launches(lean_kernels.copy2d, values, pointers, order, grid):
                target = torch.full((33, 96), float("nan"), device="cuda")
                launch(stream, source.data_ptr(), target.data_ptr(), 96, negate)
                results.append(target)
            torch.cuda.synchronize()
            assert torch.equal(results[0].view(torch.int32), results[1].view(torch.int32))
            sign = -1 if negate else 1
            assert torch.equal(results[1][:, :70], sign * source[:, :70])
            assert bool(results[1][:, 70:].isnan().all())


def run_calls(tmp_path: Path, launcher: str) -> dict[str, Any]:
    import torch

    out = tmp_path / f"{launcher}.pt"
    environment = {
        **os.environ,
        "NINETOOTHED_C_LAUNCHER": launcher,
        "NINETOOTHED_TUNING": "off",
        "NINETOOTHED_CACHE_DIR": str(tmp_path / "cache"),
    }
    script = ROOT / "tests" / "support" / "lean_gpu_calls.py"
    result = subprocess.run(
        [sys.executable, str(script), str(out)], env=environment, capture_output=True,
        text=True, timeout=570, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    saved: dict[str, Any] = torch.load(out)
    return saved


def test_ops_and_made_kernels_match_tritons_launcher(tmp_path: Path) -> None:
    import torch

    lean_run = run_calls(tmp_path, "on")
    triton_run = run_calls(tmp_path, "off")
    assert lean_run["lean"] > 0, "no launch took the lean launcher"
    assert triton_run["lean"] == 0
    assert lean_run["outputs"].keys() == triton_run["outputs"].keys()
    for name, ours in lean_run["outputs"].items():
        theirs = triton_run["outputs"][name]
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[ours.element_size()]
        assert torch.equal(ours.view(bits), theirs.view(bits)), name
    scaled = lean_run["outputs"]["scale 0.1"]
    assert not bool(scaled.isnan().any()), "the made kernel did not write its output"
