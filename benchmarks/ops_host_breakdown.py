"""Where ``ops.add``'s host time goes (``python benchmarks/ops_host.py --breakdown``, a GPU).

Times in turn, per call on the host: ``torch.add``, ``torch.add(out=)``,
``torch.empty_like``, ``ops.add`` (4096 float16 elements), its layers alone
(the express lane, the recorded plan, the plan's pinned launch), and one bound
launch of the add kernel (its plan for 8192 elements, captured when
``ops.add`` binds it) called twice over: through Triton's own launcher and
through NineToothed's lean C launcher (``nt_triton._launch.lean``).  The
difference of the last two is what the lean launcher saves per launch; it
is "-" where the lean launcher does not apply (``NINETOOTHED_C_LAUNCHER=off``,
another Triton than 3.6, no C compiler).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["breakdown"]


def _captured_launches(ops: Any, x: Any) -> dict[str, Callable[[], Any]]:
    """The add kernel's bound launch through each launcher, with its stream and per-call values."""
    import torch

    from nt_triton._launch import compiled, lean

    captured: list[Any] = []
    original = compiled.Loaded.bind

    def bind(self: Any, grid: tuple[int, int, int], others: Any) -> Callable[..., Any]:
        launch = original(self, grid, others)

        def recording(stream: int, *per_call: Any) -> Any:
            captured.append((self, grid, list(others), stream, per_call))
            return launch(stream, *per_call)

        return recording

    wide = torch.randn(2 * x.numel(), dtype=x.dtype, device=x.device)
    compiled.Loaded.bind = bind  # type: ignore[method-assign]
    try:
        total = ops.add(wide, wide)  # a new shape: binds and launches its plan
    finally:
        compiled.Loaded.bind = original  # type: ignore[method-assign]
    loaded, grid, others, stream, per_call = captured[-1]
    triton_launch = loaded.bind_triton(grid, others)
    # The launches write ``total``: the closures keep it and ``wide`` alive.
    alive = (wide, total)
    launches = {
        "bound launch, Triton's launcher": lambda alive=alive: triton_launch(stream, *per_call)
    }
    lean_launch = (
        lean.make_launch(loaded.kernel, loaded.order, grid, others) if loaded.lean else None
    )
    if lean_launch is not None:
        launches["bound launch, lean launcher"] = lambda alive=alive: lean_launch(stream, *per_call)
    return launches


def _layers(ops: Any, x: Any, y: Any) -> dict[str, Callable[[], Any]]:
    """``ops.add``'s layers below the op, each called alone: its express lane (when armed),
    its recorded plan, and the plan's pinned launch of the kernel with an output."""
    import functools

    import torch

    for _ in range(3):  # the second call records the plan and arms the lane
        ops.add(x, y)
    memo = ops.add.memo
    plans = [p for p in memo._plans.values() if getattr(p, "__code__", None)]
    layers: dict[str, Callable[[], Any]] = {}
    lane = getattr(ops.add, "_lane", None)
    if lane is not None:
        layers["express lane (ops.add less its dispatch)"] = lambda: lane(x, y)
    if plans:
        plan, framework = plans[-1], memo.framework
        layers["recorded plan (allocation and pinned launch)"] = lambda: plan(framework, (x, y), {})
        constants = [v for n, v in plan.__globals__.items() if n.startswith("c") and callable(v)]
        # The allocation: a partial of new_empty, or the express extension's Allocate.
        python = [v for v in constants if isinstance(v, functools.partial)]
        allocating = python + [v for v in constants if type(v).__name__ == "Allocate"]
        launches = [value for value in constants if not any(value is a for a in allocating)]
        if allocating:
            allocation = allocating[0]
            kind = "Python" if python else "Allocate"
            layers[f"allocation ({kind})"] = allocation
        if launches:
            z = torch.empty_like(x)
            launch = launches[0]
            layers[f"pinned launch ({type(launch).__name__})"] = lambda: launch(x, y, z)
    return layers


def breakdown(measure: Callable[..., dict[str, list[float]]], rounds: int, count: int) -> list[str]:
    """Markdown rows: each component's median [min - max] us per call."""
    import torch

    from nt_torch import ops

    x, y = (torch.randn(4096, dtype=torch.float16, device="cuda") for _ in range(2))
    z = torch.empty_like(x)
    calls: dict[str, Callable[[], Any]] = {
        "torch.add": lambda: torch.add(x, y),
        "torch.add(out=)": lambda: torch.add(x, y, out=z),
        "torch.empty_like": lambda: torch.empty_like(x),
        "ops.add": lambda: ops.add(x, y),
        **_layers(ops, x, y),
        **_captured_launches(ops, x),
    }
    times = measure(calls, rounds, count)
    lines = ["| component | us/call median [min - max] |", "|---|---:|"]
    for name, values in times.items():
        values = sorted(values)
        lines.append(
            f"| {name} | {values[len(values) // 2]:.2f} [{values[0]:.2f} - {values[-1]:.2f}] |"
        )
    if "bound launch, lean launcher" not in times:
        lines.append("| bound launch, lean launcher | - (not used here) |")
    return lines
