"""A generated kernel, loaded and ready to launch: :class:`TritonKernel`.

Its public surface is what framework adapters use (the
:class:`~ninetoothed.hookspecs.GeneratedKernel` contract): ``spec``,
``source``, ``source_path``, ``signature``, ``configurations``, ``inputs``,
``outputs``, ``interpreting``, and the pair :meth:`~TritonKernel.prepare`
(the per-call host work, returning a :class:`LaunchPlan`) and
:meth:`~TritonKernel.launch`.  Launchers that run the kernel themselves
(jax-triton) also use :meth:`~TritonKernel.concrete_grid`,
:attr:`~TritonKernel.launch_options` and :attr:`~TritonKernel.function`.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ninetoothed.hookspecs import PreparedLaunch
from ninetoothed.ir import KernelSpec
from nt_triton import cache, knobs, tuning
from nt_triton.abi import KernelSignature, ParameterKind
from nt_triton.codegen import GeneratedSource, naming
from nt_triton.host import HostFunction, LaunchPlan, compile_host

__all__ = ["LaunchPlan", "TritonKernel"]


class TritonKernel:
    """A generated Triton kernel with its host code (a ``GeneratedKernel``)."""

    def __init__(
        self,
        spec: KernelSpec,
        generated: GeneratedSource,
        configurations: Sequence[tuning.Configuration],
        host_source: str,
        source: str,
        path: Path,
    ) -> None:
        self.spec = spec
        self.source = source
        """The cached source file's text: the kernel, its configurations, its host code."""
        self.source_path = str(path)
        self.signature: KernelSignature = generated.signature
        self.configurations: tuple[tuning.Configuration, ...] = tuple(configurations)
        self.inputs: tuple[str, ...] = generated.inputs
        """Tensor parameters the kernel reads."""
        self.outputs: tuple[str, ...] = generated.outputs
        """Tensor parameters the kernel writes (returned by functional adapters)."""
        self.host_source = host_source
        self.function: Any = getattr(cache.load(path, generated.injected), generated.kernel_name)
        """The ``@triton.jit`` function."""
        self.prepare: HostFunction = compile_host(host_source, spec, generated.signature)
        """``prepare(tensors, launch_args, scalars) -> LaunchPlan``: the per-call host work.

        ``tensors`` describes each tensor parameter, in order; ``launch_args``
        holds what the kernel gets for each tensor's pointer (objects with
        ``data_ptr()`` and ``dtype``, torch tensors under the interpreter, or a
        launcher's own array objects); ``scalars`` maps scalar parameters and
        symbols to their values.  Returns the arguments in signature order, the
        grid and the pinned meta values; raises
        :class:`~ninetoothed.errors.LaunchError` when the shapes do not fit the
        arrangement, or some but not all meta symbols are pinned.  (The
        generated host function itself, so a call pays no extra frame.)"""
        self._meta_names = tuple(spec.meta_symbols)
        self._launch_options = tuning.launch_options(spec.options)
        self._runner = self._autotuner()

    @property
    def interpreting(self) -> bool:
        """Whether launches run through Triton's CPU interpreter (``TRITON_INTERPRET=1``)."""
        return knobs.interpreting()

    @property
    def best_config(self) -> Any:
        """The configuration auto-tuning chose for the last call (None when untuned)."""
        return getattr(self._runner, "best_config", None)

    def launch(self, plan: PreparedLaunch, stream: int = 0) -> None:
        """Launch ``plan`` on ``stream`` (a raw handle; 0 means Triton's default)."""
        if stream and not knobs.interpreting():
            with _current_stream(stream):
                self._launch(plan)
            return
        self._launch(plan)

    def concrete_grid(self, plan: PreparedLaunch) -> tuple[tuple[int, ...], dict[str, int]]:
        """The plan's grid and meta values: pinned ones, or the first configuration's.

        Auto-tuned kernels' grids are functions of the meta values; the shapes
        agree for one configuration exactly when they agree for all, and so
        does the grid's emptiness.  Evaluating the grid runs the launch-time
        shape checks, so callers that launch later (inside a JAX computation)
        call this to report bad shapes at once.
        """
        if not callable(plan.grid):
            return tuple(plan.grid), dict(plan.meta or {})
        meta = plan.meta if plan.meta is not None else self.configurations[0].kwargs()
        return tuple(plan.grid(meta)), dict(meta)

    @property
    def launch_options(self) -> tuple[int, int]:
        """``(num_warps, num_stages)`` of launches that skip tuning (pinned meta values)."""
        return self._launch_options

    def _launch(self, plan: PreparedLaunch) -> None:
        arguments, grid, meta = plan.arguments, plan.grid, plan.meta
        if meta is not None:
            resolved = grid(meta) if callable(grid) else grid
            if resolved[0] == 0:
                return
            num_warps, num_stages = self._launch_options
            self.function[resolved](*arguments, **meta, num_warps=num_warps, num_stages=num_stages)
            return
        if self._runner is not None:
            self._runner[grid](*arguments)
            return
        assert not callable(grid)
        if grid[0] == 0:
            return
        config = self.configurations[0]
        self.function[grid](*arguments, num_warps=config.num_warps, num_stages=config.num_stages)

    def _autotuner(self) -> Any:
        """Triton's autotuner over the configurations, or None when nothing is tuned."""
        import triton

        if not self._meta_names:
            return None
        triton_configs = [
            triton.Config(c.kwargs(), num_warps=c.num_warps, num_stages=c.num_stages)
            for c in self.configurations
        ]
        key = [p.name for p in self.signature.of_kind(ParameterKind.SIZE)] + [naming.INT64_FLAG]
        options: dict[str, Any] = {}
        if knobs.interpreting():
            options["do_bench"] = _interpreter_benchmark
        elif "cache_results" in inspect.signature(triton.autotune).parameters:
            # Persist tuning results on disk (Triton's own cache) across processes.
            options["cache_results"] = True
        return triton.autotune(configs=triton_configs, key=key, **options)(self.function)


@contextlib.contextmanager
def _current_stream(stream: int) -> Iterator[None]:
    """Make Triton launch on ``stream``.

    Triton's launcher asks its driver for the current stream (through PyTorch
    up to Triton 3.6; the device's default stream on its torch-free path), so
    frameworks other than PyTorch pass their own stream here.
    """
    from triton.runtime import driver

    active = driver.active
    previous = active.__dict__.get("get_current_stream")
    active.get_current_stream = lambda device=None: stream
    try:
        yield
    finally:
        if previous is None:
            del active.get_current_stream
        else:
            active.get_current_stream = previous


def _interpreter_benchmark(
    kernel_call: Callable[[], Any], quantiles: Sequence[float]
) -> list[float]:
    """Stand-in for Triton's benchmarker under its interpreter (which has no driver).

    It runs the configuration once, so every configuration tried is exercised,
    and returns the host time, which is what the interpreter spends.
    """
    start = time.perf_counter()
    kernel_call()
    elapsed = (time.perf_counter() - start) * 1e3
    return [elapsed for _ in quantiles]
