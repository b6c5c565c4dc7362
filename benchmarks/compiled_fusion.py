"""What Inductor fuses around our ``mm`` (``compiled.py``'s fusion section).

Inductor launches our kernels as user Triton kernels: it does not fuse into
them (their source is not its IR), but it fuses the element-wise work around
them into its own kernels.  Each case is compiled twice, with ``nt_torch.ops.mm``
and with ``torch.mm``; the row gives the kernels each generated wrapper
launches (Triton kernels' ``.run(`` calls plus cuBLAS's ``extern_kernels``
calls, read from the code ``torch._inductor.utils.run_and_get_code`` returns)
and the median time over interleaved rounds.  Shapes: (2048, 2048) float16.
Where the running PyTorch has Inductor's experimental epilogue fusion into
user kernels (``epilogue_fusion_user_defined_triton_kernel``, 2.13), the
epilogue case runs once more with it on.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

SIZE = 2048
EXPERIMENT = "epilogue, user-kernel epilogue fusion on"
"""The row of Inductor's experimental epilogue fusion into user kernels, where present."""


def _cases(mm: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    import torch

    def alone(x: Any, b: Any) -> Any:
        return mm(x, b)

    def prologue(x: Any, b: Any) -> Any:
        return mm(torch.relu(x) * 0.5, b)

    def epilogue(x: Any, b: Any) -> Any:
        return torch.relu(mm(x, b) * 2 + x)

    def both(x: Any, b: Any) -> Any:
        return torch.relu(mm(torch.relu(x), b) + x)

    return {"mm alone": alone, "prologue": prologue, "epilogue": epilogue, "both": both}


def launches(code: str) -> int:
    """Kernel launches in Inductor's generated wrapper code."""
    return code.count(".run(") + code.count("extern_kernels.")


def report(rounds: int) -> str:
    """The fusion section: kernels launched and medians, ours against torch's."""
    import torch
    from measure import Clock, interleaved_rounds, own_code
    from torch._inductor.utils import run_and_get_code

    from nt_torch import ops

    x = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16) / 8
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16) / 8
    ours, theirs = _cases(ops.mm), _cases(torch.mm)
    runs: dict[str, Callable[[], object]] = {}
    counts: dict[str, int] = {}
    for name in ours:
        for side, case in (("ours", ours[name]), ("torch", theirs[name])):
            label = f"{name}, {side}"
            case(x, b)  # eagerly first: makes and tunes our kernel
            # Ours and torch's case share a code object, so Dynamo's cache: copy it.
            function = torch.compile(own_code(case, side), fullgraph=True)
            with torch._inductor.config.patch(force_disable_caches=True):  # code to read
                result, codes = run_and_get_code(function, x, b)
            torch.testing.assert_close(result, theirs[name](x, b), rtol=2e-2, atol=2e-2)
            counts[label] = launches("\n".join(codes))
            runs[label] = lambda f=function: f(x, b)
    switch = "epilogue_fusion_user_defined_triton_kernel"
    if hasattr(torch._inductor.config, switch):  # experimental (PyTorch 2.13), off by default
        case = ours["epilogue"]
        with torch._inductor.config.patch({switch: True, "force_disable_caches": True}):
            function = torch.compile(lambda x, b: case(x, b), fullgraph=True)
            result, codes = run_and_get_code(function, x, b)
        torch.testing.assert_close(result, theirs["epilogue"](x, b), rtol=2e-2, atol=2e-2)
        counts[EXPERIMENT] = launches("\n".join(codes))
        runs[EXPERIMENT] = lambda f=function: f(x, b)
    times, failures = interleaved_rounds(runs, Clock("cuda"), rounds)
    if failures:
        raise RuntimeError(f"timing failed: {failures}")
    median = {label: statistics.median(values) * 1e3 for label, values in times.items()}
    lines = [
        f"Fusion around mm, ({SIZE}, {SIZE}) float16, compiled: launches and medians of "
        f"{rounds} interleaved rounds",
        "",
        "| case | launches, ours | launches, torch | ours, µs | torch, µs | ours / torch |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ours:
        mine, other = f"{name}, ours", f"{name}, torch"
        lines.append(
            f"| {name} | {counts[mine]} | {counts[other]} | {median[mine]:.1f} | "
            f"{median[other]:.1f} | {median[mine] / median[other]:.3f} |"
        )
    if EXPERIMENT in counts:
        lines.append(
            f"| epilogue, ours, {EXPERIMENT.split(', ', 1)[1]} | {counts[EXPERIMENT]} | | "
            f"{median[EXPERIMENT]:.1f} | | {median[EXPERIMENT] / median['epilogue, torch']:.3f} |"
        )
    return "\n".join(lines)
