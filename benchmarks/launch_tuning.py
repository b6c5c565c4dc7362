"""The tuner's choice against an exhaustive search over the same space (issue 12: within 2 %).

:func:`report` is called after a kernel's first call on torch CUDA tensors
(``benchmarks/launch.py`` and ``tests/test_launch_gpu.py``): it times the
configuration the tuner chose and, when asked, every configuration of the
space that fits the call, each with ``triton.testing.do_bench`` (an L2 flush
between runs, a median), through the kernel's own fast launcher — so the
kernels timed are the ones the tuner compiled (a disk hit each).  This reads
nt-triton internals (``FastLauncher._tuning_call``): it is a measurement
tool, not API.
"""

from __future__ import annotations

from typing import Any


def describe(configuration: Any) -> str:
    """``BLOCK_SIZE_M=128 ... w4 s3``."""
    values = " ".join(f"{k}={v}" for k, v in configuration.values.items())
    return f"{values} w{configuration.num_warps} s{configuration.num_stages}"


def runs(kernel: Any, args: tuple[Any, ...]) -> tuple[Any, Any]:
    """``(launch(configuration) -> run, candidates)`` for this call of ``kernel``."""
    from nt_torch.adapter import TorchAdapter
    from nt_triton import _tuning as tuning
    from nt_triton._launch.tuning_calls import MissedCall

    generated = kernel.generated
    launcher = kernel.fast_path
    if launcher is None:
        raise RuntimeError("the kernel has no fast path (call it once on CUDA tensors first)")
    bound = TorchAdapter().bind(generated, args, {})
    pointers = [info.data_ptr for info in bound.tensors]
    prepared = generated.prepare(bound.tensors, pointers, bound.scalars)
    device = args[0].get_device()
    call = launcher._tuning_call(MissedCall(bound, prepared, device, pointers, []))
    candidates = [
        c
        for c in generated.configurations
        if tuning.fits(c, generated._sizing, call.values, call.element_bytes)
    ]
    return call.launch, candidates


def report(kernel: Any, args: tuple[Any, ...], exhaustive: bool) -> dict[str, Any]:
    """The chosen configuration and its time; with ``exhaustive``, the best of the space."""
    import triton.testing

    launch, candidates = runs(kernel, args)
    chosen = kernel.generated.best_config
    answer: dict[str, Any] = {"chosen": describe(chosen), "configurations": len(candidates)}
    answer["chosen_ms"] = triton.testing.do_bench(launch(chosen), warmup=25, rep=100)
    if not exhaustive:
        return answer
    times = {}
    for configuration in candidates:
        try:
            times[describe(configuration)] = triton.testing.do_bench(
                launch(configuration), warmup=25, rep=100
            )
        except Exception as error:  # noqa: BLE001 - pruned by the tuner too (resources)
            times[describe(configuration)] = float("inf")
            answer.setdefault("failed", []).append(f"{describe(configuration)}: {error}"[:200])
    best = min(times, key=lambda name: times[name])
    answer.update(best=best, best_ms=times[best], all_ms=times)
    return answer
