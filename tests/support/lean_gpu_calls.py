"""Library ops and made kernels run on a GPU, their outputs saved (``test_lean_launch_gpu``).

``python tests/support/lean_gpu_calls.py OUT`` runs the calls with fixed
seeds and saves every output to ``OUT`` (``torch.save``), with the number of
launches bound through the lean launcher; run once with
``NINETOOTHED_C_LAUNCHER=off`` and once without, the outputs must agree bit
for bit.  Tuning is off (``NINETOOTHED_TUNING=off``): both runs use the same
configurations.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

import ninetoothed
from ninetoothed import Tensor
from nt_triton._launch import lean

made: list[int] = [0]
_original = lean.make_launch


def _counting(*args: Any) -> Any:
    launch = _original(*args)
    made[0] += launch is not None
    return launch


lean.make_launch = _counting  # type: ignore[assignment]


def _scale_2d(x: Any, alpha: Any, y: Any) -> None:
    y = x * alpha  # noqa: F841


def _shift(x: Any, k: Any, y: Any) -> None:
    y = x + k  # noqa: F841


def made_kernels() -> dict[str, Any]:
    """Made kernels: a float scalar over 2-D tiles, int scalars (i64, i32, 1)."""
    generator = torch.Generator(device="cuda").manual_seed(1)
    scale = ninetoothed.make(
        lambda x, alpha, y: (x.tile((16, 32)), alpha, y.tile((16, 32))),
        _scale_2d,
        (Tensor(2, dtype=ninetoothed.float32), Tensor(0, dtype=ninetoothed.float32), Tensor(2)),
    )
    shift = ninetoothed.make(
        lambda x, k, y: (x.tile((64,)), k, y.tile((64,))),
        _shift,
        (Tensor(1, dtype=ninetoothed.int64), Tensor(0, dtype=ninetoothed.int64), Tensor(1)),
    )
    outputs: dict[str, Any] = {}
    x = torch.randn(33, 80, device="cuda", generator=generator)[:, :70]  # non-contiguous
    for alpha in (0.1, -3.25, 1e30):
        y = torch.full((33, 70), float("nan"), device="cuda")
        scale(x, alpha, y)
        outputs[f"scale {alpha}"] = y
    n = torch.randint(-(2**40), 2**40, (1000,), device="cuda", generator=generator)
    for k in (2**33 + 5, -7, 1):  # i64, i32, specialised to 1
        y = torch.full((1000,), -1, dtype=torch.int64, device="cuda")
        shift(n, k, y)
        outputs[f"shift {k}"] = y
    return outputs


def library_ops() -> dict[str, Any]:
    """Library ops: element-wise, reductions, a matmul, attention with a float scale."""
    from nt_torch import ops

    generator = torch.Generator(device="cuda").manual_seed(2)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", generator=generator).half()

    x, y = randn(4096), randn(4096)
    a, b = randn(3, 5, 7), randn(7)
    m, w = randn(33, 70), randn(50, 70)
    q, k, v = randn(1, 4, 9, 64), randn(1, 2, 130, 64), randn(1, 2, 130, 64)
    return {
        "add": ops.add(x, y),
        "add broadcast": ops.add(a, b),
        "add size 1": ops.add(randn(1), randn(1)),
        "mm": ops.mm(m, w.t()),
        "rms_norm": ops.rms_norm(m, randn(70), 1e-5),
        "softmax": ops.softmax(a, dim=-1),
        "silu": ops.silu(a),
        "sdpa": ops.scaled_dot_product_attention(q, k, v, scale=0.3, enable_gqa=True),
    }


def main(path: str) -> None:
    outputs = {**made_kernels(), **library_ops()}
    torch.cuda.synchronize()
    torch.save({"outputs": {k: v.cpu() for k, v in outputs.items()}, "lean": made[0]}, path)


if __name__ == "__main__":
    main(sys.argv[1])
