"""A generated kernel, loaded and ready to launch: :class:`TritonKernel`.

Its public surface is what framework adapters use (the
:class:`~ninetoothed.runtime.hookspecs.GeneratedKernel` contract): ``spec``,
``source``, ``source_path``, ``signature``, ``configurations``, ``inputs``,
``outputs``, ``interpreting``, and the pair :meth:`~TritonKernel.prepare`
(the per-call host work, returning a :class:`LaunchPlan`) and
:meth:`~TritonKernel.launch`.  Launchers that run the kernel themselves
(jax-triton) also use :meth:`~TritonKernel.concrete_grid`,
:attr:`~TritonKernel.launch_options` and :attr:`~TritonKernel.function`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ninetoothed.errors import LaunchError
from ninetoothed.runtime.aliasing import Aliasing
from ninetoothed.runtime.hookspecs import HostReads, Miss, PreparedLaunch
from ninetoothed.spec.kernel_spec import KernelSpec
from nt_triton import _failures as failures
from nt_triton import _interpreter as interpreter
from nt_triton import _tuning as tuning
from nt_triton import knobs
from nt_triton._abi import KernelSignature
from nt_triton._codegen import GeneratedSource
from nt_triton._host import HostFunction, LaunchPlan, compile_host
from nt_triton._launch import scratch
from nt_triton._launch.launcher import FastLauncher
from nt_triton._newest_alive import NewestAlive
from nt_triton.cache import _memos
from nt_triton.cache import _sources as sources
from nt_triton.tuner._core import Tuner

__all__ = ["LOADED", "LaunchPlan", "TritonKernel"]


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
        function: Any = None,
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
        self._kernel_name = generated.kernel_name
        self._functions: dict[bool, Any] = {}
        self._fitting: dict[tuple[int, ...], int] = {}
        """Per set of argument element sizes, the first configuration that fit the GPU
        in an untuned launch (:meth:`_run_untuned`)."""
        """The ``@triton.jit`` function per mode (interpreting or not): Triton decides
        at decoration whether a function is interpreted."""
        self.injected = generated.injected
        """Objects the kernel module refers to (users' ``triton.jit`` helpers)."""
        if function is not None:  # loaded before, in this mode (see nt_triton.cache._reuse)
            self._functions[knobs.interpreting()] = function
        self.function  # noqa: B018  (loads the module now: a bad source fails at make)
        LOADED[self.source_path] = self
        self.gpu_check_pending = False
        """Under the interpreter: the GPU front-end check waits for a call's constexpr
        values (set by the backend when placeholders could not decide it)."""
        self._gpu_checked: set[tuple[Any, ...]] = set()
        self._front_ends_passed: set[tuple[Any, ...]] = set()
        self.aliasing = Aliasing.of(spec, generated.outputs)
        """Which arguments may share memory with the tensors the kernel writes."""
        self.prepare: HostFunction = compile_host(
            host_source, spec, generated.signature, self.aliasing
        )
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
        self._tuner: Tuner | None = None
        self._tuner_lock = threading.Lock()
        self._meta_names = tuple(spec.meta_symbols)
        self._launch_options = tuning.launch_options(spec.options)
        self._sizing = tuning.Sizing(
            generated.signature, generated.footprint, "tl.dot(" in generated.source
        )

    @property
    def function(self) -> Any:
        """The ``@triton.jit`` function, for the current mode.

        ``TRITON_INTERPRET`` may change after ``make`` (a notebook that sets it
        later): Triton fixes at decoration whether a function is interpreted,
        so the cached source is loaded again, once per mode, for the mode of
        the call.
        """
        mode = knobs.interpreting()
        function = self._functions.get(mode)
        if function is None:
            module = sources.load(Path(self.source_path), self.injected)
            function = self._functions[mode] = getattr(module, self._kernel_name)
        return function

    @property
    def tuner(self) -> Tuner:
        """Chooses this kernel's configuration per call (:mod:`nt_triton.tuner`).

        One per kernel, made on first use: threads whose first calls arrive together
        share it, and with it its lock, so they tune once (``functools.cached_property``
        makes one per thread there from Python 3.12).
        """
        tuner = self._tuner
        if tuner is None:
            with self._tuner_lock:
                tuner = self._tuner
                if tuner is None:
                    tuner = self._tuner = Tuner(
                        self.spec.label,
                        Path(self.source_path).stem,
                        self.configurations,
                        self._sizing,
                        failures.application_location(self.spec.application),
                    )
        return tuner

    def fast_launcher(self, reads: HostReads, miss: Miss) -> FastLauncher:
        """The per-call fast path for a framework (:mod:`nt_triton._launch.launcher`).

        ``reads`` says how the framework's tensors are read; ``miss(args,
        kwargs)`` handles calls the fast path has no plan for (full validation,
        then :meth:`FastLauncher.launch_bound`).
        """
        return FastLauncher(self, reads, miss)

    @property
    def interpreting(self) -> bool:
        """Whether launches run through Triton's CPU interpreter (``TRITON_INTERPRET=1``)."""
        return knobs.interpreting()

    @property
    def best_config(self) -> tuning.Configuration | None:
        """The configuration of the most recent call that looked one up (None before)."""
        return self._tuner.last if self._tuner is not None else None

    def launch(self, plan: PreparedLaunch, stream: int = 0) -> None:
        """Launch ``plan`` on ``stream`` (a raw handle; 0 means Triton's default)."""
        if stream and not knobs.interpreting():
            with _current_stream(stream):
                self._launch(plan)
            return
        self._launch(plan)

    def concrete_grid(self, plan: PreparedLaunch) -> tuple[tuple[int, ...], dict[str, int]]:
        """The plan's grid and meta values: pinned ones, or the first viable configuration's.

        Auto-tuned kernels' grids are functions of the meta values.  Evaluating
        the grid runs the launch-time shape checks, so callers that launch
        later (inside a JAX computation) call this to report bad shapes at
        once.  Most checks hold for every configuration or for none; a size
        that must be 1 and counts tiles (an ``expand`` of a weight's tiles)
        holds only for large enough blocks, so the first configuration that
        passes is taken, and the first failure is raised when none does.
        """
        if not callable(plan.grid):
            return tuple(plan.grid), dict(plan.meta or {})
        if plan.meta is not None:
            return tuple(plan.grid(plan.meta)), dict(plan.meta)
        configuration, grid = next(self._passing(plan))  # usually the first: one evaluation
        return grid, configuration.kwargs()

    def viable_configurations(self, plan: PreparedLaunch) -> list[tuning.Configuration]:
        """The configurations whose grid passes the plan's launch checks (raises the
        first failure when none does)."""
        if not callable(plan.grid) or plan.meta is not None:
            return list(self.configurations)
        return [configuration for configuration, _ in self._passing(plan)]

    def _passing(
        self, plan: PreparedLaunch
    ) -> Iterator[tuple[tuning.Configuration, tuple[int, ...]]]:
        """Each configuration whose grid passes the plan's launch checks, with that grid,
        in order; the first failure is raised when none passes."""
        first_error: LaunchError | None = None
        passed = False
        for configuration in self.configurations:
            try:
                grid = tuple(plan.grid(configuration.kwargs()))
            except LaunchError as error:
                first_error = first_error or error
                continue
            passed = True
            yield configuration, grid
        if not passed:
            assert first_error is not None
            raise first_error

    def check_compiles(
        self,
        tensors: Sequence[Any],
        plan: PreparedLaunch,
        configurations: Sequence[Mapping[str, Any]],
    ) -> None:
        """Run Triton's front end for the call's types and each configuration's meta values;
        an application it rejects raises :func:`failures.compile_failure`'s error now.

        For launchers that compile later, outside the call: under ``jax.jit``
        jax-triton compiles when XLA lowers the computation, and Triton's own
        error would reach the user unnamed.  Each set of types and values is
        checked once per process.
        """
        from nt_triton import _gpu_check as gpu_check  # Triton's front end: off the import path

        for meta in configurations:
            types = gpu_check.call_types(self.signature, tensors, plan.arguments, meta)
            key = (tuple(types[0].items()), tuple((i, repr(v)) for i, v in types[1].items()))
            if key in self._front_ends_passed:
                continue
            with failures.compile_errors_named(self.spec.label, self.spec.application):
                gpu_check.check_call(self.function, types)
            self._front_ends_passed.add(key)

    @property
    def launch_options(self) -> tuple[int, int]:
        """``(num_warps, num_stages)`` of launches that skip tuning (pinned meta values)."""
        return self._launch_options

    def _launch(self, plan: PreparedLaunch) -> None:
        """Triton's own launch (the interpreter, callbacks): pinned, or the tuner's choice.

        Under the interpreter the tuner runs nothing: it takes the space's first
        configuration (deterministic, no GPU); the launch runs alone in the process,
        with bfloat16 computed as on a GPU (:mod:`nt_triton._interpreter`).
        """
        if knobs.interpreting():
            with interpreter.running():
                self._run(plan)
            return
        self._run(plan)

    def _run(self, plan: PreparedLaunch) -> None:
        if plan.meta is not None:
            self._run_with(plan, plan.meta, *self._launch_options, {})
            return
        if knobs.interpreting():
            config = self.tuner.interpreted()
            self._run_with(plan, config.kwargs(), config.num_warps, config.num_stages, {})
            return
        self._run_untuned(plan)

    def _run_untuned(self, plan: PreparedLaunch) -> None:
        """Triton's launch on a GPU without tuning (callbacks): the first configuration
        that fits the GPU for the call's element sizes.

        The space is estimated for 2-byte elements (``_tuning``), so its first
        configuration may need more shared memory than a float32 call has; such a
        launch fails before it runs anything, and the next configuration is tried.
        The one that ran is remembered per set of element sizes.
        """
        from triton.runtime.errors import OutOfResources

        key = tuple(getattr(argument, "element_size", lambda: 0)() for argument in plan.arguments)
        start = self._fitting.get(key, 0)
        for index in range(start, len(self.configurations)):
            config = self.configurations[index]
            cap = {"maxnreg": config.maxnreg} if config.maxnreg is not None else {}
            try:
                self._run_with(plan, config.kwargs(), config.num_warps, config.num_stages, cap)
            except LaunchError as error:
                if not isinstance(error.__cause__, OutOfResources):
                    raise
                if index == len(self.configurations) - 1:
                    raise
                continue
            self._fitting[key] = index
            return

    def _run_with(
        self,
        plan: PreparedLaunch,
        meta: Mapping[str, Any],
        num_warps: int,
        num_stages: int,
        cap: Mapping[str, int],
    ) -> None:
        arguments, grid = plan.arguments, plan.grid
        if self.gpu_check_pending:
            self._check_for_gpu(arguments, meta)
        resolved = grid(meta) if callable(grid) else grid
        if resolved[0] == 0:
            return
        from triton.errors import TritonError

        try:
            # Kernels making tensor descriptors need scratch memory (_launch.scratch).
            launch = scratch.provided(
                lambda _stream: self.function[resolved](
                    *arguments, **meta, num_warps=num_warps, num_stages=num_stages, **cap
                )
            )
            launch(0)
        except TritonError as error:
            from triton.compiler.errors import CompilationError

            if isinstance(error, CompilationError) and not knobs.interpreting():
                raise failures.compile_failure(
                    self.spec.label, self.spec.application, error
                ) from error
            # Triton names a dtype, not the argument that has it: name the parameter.
            raise failures.explained(
                self.spec.label, self.signature, arguments, error, self.source_path
            ) from error

    def _check_for_gpu(self, arguments: Sequence[Any], meta: Mapping[str, Any]) -> None:
        """The GPU front-end check with this call's constexpr values (once per set)."""
        from nt_triton import _gpu_check as gpu_check  # interpreter-only: off the import path

        given = {
            parameter.name: argument
            for parameter, argument in zip(self.signature, arguments)
            if parameter.constexpr
        }
        # The call's element types: a kernel mixing index and float tensors compiles
        # with its own, not with one default for all (nt_triton._gpu_check).
        elements = gpu_check.call_elements(self.signature, arguments)
        key = (
            tuple(sorted((name, repr(value)) for name, value in given.items())),
            tuple(sorted(elements.items())),
        )
        if key not in self._gpu_checked:
            gpu_check.check(self.spec, self.function, self.signature, {**meta, **given}, elements)
            self._gpu_checked.add(key)


LOADED: NewestAlive[TritonKernel] = _memos.register(
    NewestAlive(), "nt_triton._kernel.LOADED", clearable=False
)
"""Every kernel made in this process, by its cached source file (launches that
name a kernel by that path, such as PyTorch's custom operator, find it here):
the newest one alive, as several kernel objects may share one file."""


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
