"""The Triton code-generation backend: ``generate(spec) -> TritonKernel``."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.hookspecs import TensorInfo
from ninetoothed.ir import KernelSpec
from nt_triton import autotune, cache, knobs
from nt_triton.codegen import GeneratedSource, KernelWriter
from nt_triton.launcher import compile_host, host_source


class TritonKernel:
    """A generated Triton kernel with its launcher (a ``GeneratedKernel``)."""

    def __init__(
        self,
        spec: KernelSpec,
        generated: GeneratedSource,
        configs: list[autotune.Configuration],
        host: str,
        path: Path,
    ) -> None:
        self.spec = spec
        self.generated = generated
        self.configs = configs
        self.source = generated.source
        self.source_path = str(path)
        self.inputs = generated.loaded
        """Tensor parameters the kernel reads."""
        self.outputs = generated.stored
        """Tensor parameters the kernel writes (returned by functional adapters)."""
        self.host_source = host
        self._host = compile_host(host, spec)
        module = cache.load(path, generated.injected)
        self.function = getattr(module, generated.kernel_name)
        self._runner = self._make_runner()

    def _make_runner(self) -> Any:
        import triton

        if not self.spec.meta_symbols:
            return None
        triton_configs = [
            triton.Config(c.kwargs(), num_warps=c.num_warps, num_stages=c.num_stages)
            for c in self.configs
        ]
        key = list(self.generated.used_sizes) + ["ninetoothed_int64"]
        options: dict[str, Any] = {}
        if knobs.interpreting():
            options["do_bench"] = _interpreter_benchmark
        elif "cache_results" in inspect.signature(triton.autotune).parameters:
            # Persist tuning results on disk (Triton's own cache) across processes.
            options["cache_results"] = True
        return triton.autotune(configs=triton_configs, key=key, **options)(self.function)

    def launch(
        self,
        tensors: list[TensorInfo],
        launch_args: list[Any],
        scalars: dict[str, Any],
        stream: int,
    ) -> None:
        """Launch on validated arguments (see :class:`ninetoothed.hookspecs.GeneratedKernel`)."""
        pinned = {name: scalars[name] for name in self.spec.meta_symbols if name in scalars}
        arguments, grid = self._host(tensors, launch_args, scalars)
        if stream and not knobs.interpreting():
            with _current_stream(stream):
                self._launch(pinned, arguments, grid)
            return
        self._launch(pinned, arguments, grid)

    def _launch(self, pinned: dict[str, Any], arguments: list[Any], grid: Any) -> None:
        if pinned:
            self._launch_pinned(pinned, arguments, grid)
            return
        if self._runner is not None:
            self._runner[grid](*arguments)
            return
        if grid[0] == 0:
            return
        config = self.configs[0]
        self.function[grid](*arguments, num_warps=config.num_warps, num_stages=config.num_stages)

    def _launch_pinned(self, pinned: dict[str, Any], arguments: list[Any], grid: Any) -> None:
        missing = set(self.spec.meta_symbols) - set(pinned)
        if missing:
            raise LaunchError(
                f"{self.spec.name}: to skip auto-tuning give every meta symbol; missing "
                f"{', '.join(sorted(missing))}"
            )
        values = {k: int(v) for k, v in pinned.items()}
        extra = autotune._derived(self.generated.padded_sizes, values)
        meta = {**values, **extra}
        resolved = grid(meta) if callable(grid) else grid
        if resolved[0] == 0:
            return
        options = self.spec.options
        self.function[resolved](
            *arguments,
            **meta,
            num_warps=options.get("num_warps") or 4,
            num_stages=options.get("num_stages") or 3,
        )

    @property
    def best_config(self) -> Any:
        """The configuration auto-tuning chose for the last call (None when untuned)."""
        return getattr(self._runner, "best_config", None)


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


def _interpreter_benchmark(kernel_call: Any, quantiles: Sequence[float]) -> list[float]:
    """Stand-in for Triton's benchmarker under its interpreter (which has no driver).

    It runs the configuration once, so every configuration tried is exercised,
    and returns the host time, which is what the interpreter spends.
    """
    start = time.perf_counter()
    kernel_call()
    elapsed = (time.perf_counter() - start) * 1e3
    return [elapsed for _ in quantiles]


class TritonBackend:
    """The ``"triton"`` code-generation backend (a ``CodegenBackend``)."""

    name = "triton"

    def generate(self, spec: KernelSpec) -> TritonKernel:
        """Write, cache and load the kernel for ``spec``."""
        writer = KernelWriter(spec)
        generated = writer.write()
        configs = autotune.configurations(
            spec, writer.tiles, generated.padded_sizes, writer.has_loop, writer.loop_tiles
        )
        source = generated.source
        if spec.meta_symbols:
            listing = "\n".join(
                f"#   {dict(c.kwargs())}, num_warps={c.num_warps}, num_stages={c.num_stages}"
                for c in configs
            )
            source += f"\n\n# Auto-tuning configurations ({len(configs)}):\n{listing}\n"
        generated.source = source
        host = host_source(spec, writer, generated)
        source_with_host = (
            source
            + "\n\n# Host code (runs in the launcher, not on the device):\n"
            + "\n".join(f"# {line}" for line in host.splitlines())
            + "\n"
        )
        generated.source = source_with_host
        path = cache.store(source_with_host, generated.kernel_name)
        return TritonKernel(spec, generated, configs, host, path)
