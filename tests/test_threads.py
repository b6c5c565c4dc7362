"""First calls of a kernel from eight threads at once: right results, no spurious errors,
one tuning.

Under Triton's interpreter, threads share its process-wide state: the
language it patches while a kernel runs, the grid on its one builder, and
the ``interpret`` knob the GPU check turns off (which also wrote
``TRITON_INTERPRET=0`` for every thread).  Eight threads making the first
calls of one kernel failed in most trials ("does not compile for a GPU",
"the tensors are on cpu ... set TRITON_INTERPRET=1", "Did you forget to add
@triton.jit?") or computed wrong results.  Each way a first call can go is
tried in several trials, each on a kernel no thread has called yet; every
thread checks its own result.

On the GPU's launch paths (the eager fast path, the custom operator's
implementation) eight threads' first calls of an auto-tuned kernel tune once:
tried on the CPU with the stand-in GPU (:mod:`support.stub_gpu`) and a tuner
that counts instead of timing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.stub_gpu import stubbed_gpu
from support.threads import run_threads
from support.tutorial import add

import ninetoothed
from ninetoothed import Symbol, Tensor
from nt_triton._launch.launcher import FastLauncher
from nt_triton.tuner._core import Tuner

THREADS = 8
TRIALS = 3
SIZE = 100
"""Elements per call: several programs of 16."""

BLOCK = Symbol("BLOCK", constexpr=True)

NAMES = itertools.count()
"""A fresh kernel name per trial: the kernel is generated, loaded and checked anew."""


def tiles(x, y, z, BLOCK=BLOCK):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def scaled_sum(x, y, z):
    z = x * 3 + y  # noqa: F841


def _made(way: str) -> Callable[[], Any]:
    """A function making (or returning) this trial's kernel, per ``way``."""
    name = f"scaled_sum_{next(NAMES)}"
    if way == "pinned meta":
        arranged = add.arrangement
        return _once(lambda: ninetoothed.make(arranged, scaled_sum, (Tensor(1),) * 3, name=name))
    if way == "given constexpr":  # the GPU check waits for the first call's values
        return _once(lambda: ninetoothed.make(tiles, scaled_sum, (Tensor(1),) * 3, name=name))
    return lambda: ninetoothed.make(tiles, scaled_sum, (Tensor(1),) * 3, name=name)


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    kernel = make()
    return lambda: kernel


@pytest.mark.interpreter_only  # the interpreter's process-wide state
@pytest.mark.parametrize("way", ["pinned meta", "given constexpr", "made in each thread"])
def test_first_calls_from_eight_threads(framework, way: str) -> None:
    for _ in range(TRIALS):
        _interpreted_trial(framework, way)


def _interpreted_trial(framework: Any, way: str) -> None:
    """Eight threads' first calls of a new kernel, each checking its own result."""
    keywords = {"BLOCK_SIZE": 16} if way == "pinned meta" else {"BLOCK": 16}
    kernel_of = _made(way)
    rng = np.random.default_rng()
    inputs = [rng.standard_normal((2, SIZE)).astype(np.float32) for _ in range(THREADS)]

    def work(index: int) -> None:
        x, y = inputs[index]
        args = [framework.from_numpy(x), framework.from_numpy(y)]
        args.append(framework.poisoned((SIZE,), "float32"))
        (z,) = framework.call(kernel_of(), args, keywords, [2])
        np.testing.assert_allclose(z, x * 3 + y, rtol=1e-6)

    errors = run_threads(work, THREADS)
    assert not errors, f"{len(errors)} of {THREADS} threads failed: {errors[0]!r}"


CONFIGURATION = FastLauncher._configuration


@pytest.mark.interpreter_only  # the stand-in GPU runs on CPU tensors
@pytest.mark.parametrize("path", ["eager fast path", "custom operator"])
def test_first_calls_from_eight_threads_tune_once(path: str) -> None:
    tuned: list[str] = []
    choose, build = Tuner._choose, Tuner.__init__

    def counted(
        self: Tuner, key: Any, device_name: str, make_call: Any, group: Any, fit: Any
    ) -> Any:
        tuned.append(self.name.split("'")[1])  # the kernel's name, from its label
        time.sleep(0.05)  # a tuning takes time: the other threads arrive meanwhile
        return self.configurations[0]

    def slowly_built(self: Tuner, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.01)  # widens the window in which threads find no tuner yet
        build(self, *args, **kwargs)

    with stubbed_gpu() as launches:
        # Assigned, not monkeypatched: the stub restores its own saved originals on exit.
        FastLauncher._configuration = CONFIGURATION  # type: ignore[method-assign]
        Tuner._choose = counted  # type: ignore[method-assign]
        Tuner.__init__ = slowly_built  # type: ignore[method-assign]
        try:
            for trial in range(TRIALS):
                name = _tuned_trial(path)
                assert tuned.count(name) == 1, f"trial {trial}: tuned {tuned.count(name)} times"
        finally:
            Tuner._choose, Tuner.__init__ = choose, build  # type: ignore[method-assign]
    assert len(launches) == TRIALS * THREADS


def _tuned_trial(path: str) -> str:
    """Eight threads' first calls of a new auto-tuned kernel along ``path``; its name."""
    import torch

    name = f"tuned_sum_{next(NAMES)}"
    kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1),) * 3, name=name)
    tensors = [[torch.randn(SIZE) for _ in range(3)] for _ in range(THREADS)]

    def work(index: int) -> None:
        x, y, z = tensors[index]
        if path == "eager fast path":
            kernel(x, y, z)
        else:
            torch.ops.ninetoothed.launch(kernel.source_path, [x, y], [z], [], [], [])

    errors = run_threads(work, THREADS)
    assert not errors, repr(errors[0])
    return name


@pytest.mark.parametrize("way", ["make", "jit"])
def test_making_a_kernel_parses_syntax_trees_under_the_one_lock(monkeypatch, way: str) -> None:
    """CPython 3.11 fails two threads converting syntax trees at once ("AST constructor
    recursion depth mismatch", seen once in eight threads making kernels): every
    ``ast.parse`` a make does happens under the lock Triton's interpreted launches hold."""
    import ast

    from ninetoothed.runtime import syntax_trees
    from nt_triton import _interpreter

    assert _interpreter.LOCK is syntax_trees.LOCK
    parse, held = ast.parse, []

    def watched(*args: Any, **kwargs: Any) -> Any:
        held.append(syntax_trees.LOCK._is_owned())  # type: ignore[attr-defined]
        return parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", watched)
    name = f"parsed_{next(NAMES)}"
    if way == "make":
        ninetoothed.make(tiles, scaled_sum, (Tensor(1),) * 3, name=name)
    else:
        ninetoothed.jit(name=name)(_annotated_sum)
    assert held and all(held), f"{held.count(False)} of {len(held)} parses outside the lock"


def _annotated_sum(
    x: Tensor(1).tile((BLOCK,)),  # noqa: F821
    y: Tensor(1).tile((BLOCK,)),  # noqa: F821
    z: Tensor(1).tile((BLOCK,)),  # noqa: F821
):
    z = x * 3 + y  # noqa: F841
