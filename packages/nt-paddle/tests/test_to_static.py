"""First calls inside ``paddle.jit.to_static``: kernels, functional kernels and library ops.

Paddle's translator (SOT) simulates the function's bytecode and follows the
calls into ours; before the call guard (``nt_paddle.static``) a kernel's
first call failed in the adapter lookup, which SOT cannot simulate, and every
library op failed in its tensor descriptions.  Each test makes its call the
process's first (no adapter found yet for any type), starts outputs as NaN,
pins tiles small (several programs per dimension), lets SOT compile even
tiny graphs (so the code around the call is translated, not run eagerly),
and compares the first and later ``to_static`` results with a float64 NumPy
reference and with dynamic mode.  On a GPU a warm kernel's call is its fast
path, which SOT must not simulate either: checked with the launch stubbed.
"""

# The skip for a missing Paddle must precede the imports that need Paddle.
# ruff: noqa: E402

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

paddle = pytest.importorskip("paddle", reason="paddle is not installed here")

from paddle.jit.sot.utils.envs import min_graph_size_guard

import ninetoothed
from ninetoothed import Symbol, Tensor
from ninetoothed.library import pinned_block_sizes
from ninetoothed.runtime import plugins
from ninetoothed.runtime.hookspecs import HostReads
from nt_paddle import autograd, fastpath, ops
from nt_paddle.adapter import PaddleAdapter
from nt_triton._kernel import TritonKernel
from nt_triton._launch.launcher import FastLauncher

pytestmark = pytest.mark.interpreter_only  # kernels run on CPU tensors

RNG = np.random.default_rng(20261126)


def tiles(x: Any, y: Any, z: Any) -> tuple[Any, ...]:
    BLOCK = Symbol("BLOCK", constexpr=True)
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def add(x: Any, y: Any, z: Any) -> None:
    z = x + y  # noqa: F841


def meta_tiles(x: Any, y: Any, z: Any, BLOCK: Any = ninetoothed.block_size()) -> tuple[Any, ...]:  # noqa: B008
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


@pytest.fixture(autouse=True)
def first_call(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No adapter found yet (a process's first call); SOT compiles every graph, however small."""
    monkeypatch.setattr(plugins, "_adapter_by_type", {})
    with min_graph_size_guard(0):
        yield


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Outputs the ops and functional kernels allocate start as NaN; library tiles of 16."""

    def full_nan(shape: Any, dtype: Any, place: Any) -> Any:
        return paddle.full(list(shape), float("nan"), dtype=dtype).to(place)

    monkeypatch.setattr(
        ops.framework,
        "empty",
        lambda like, shape, dtype=None: full_nan(shape, dtype or like.dtype, like.place),
    )
    monkeypatch.setattr(
        autograd,
        "_empty",
        lambda shape, like, dtype: full_nan(shape, dtype or like.dtype, like.place),
    )
    with pinned_block_sizes(16):
        yield


def randn(*shape: int) -> Any:
    return paddle.to_tensor(RNG.standard_normal(shape).astype(np.float32))


def f64(tensor: Any) -> np.ndarray:
    return tensor.numpy().astype(np.float64)


def check_static(block: Callable[..., Any], expected: np.ndarray, *args: Any) -> None:
    """``block`` under ``to_static`` twice (first call included) and eagerly: all ``expected``."""
    static = paddle.jit.to_static(block)
    for result in (static(*args), static(*args), block(*args)):
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-5)


MADE: dict[str, Any] = {}
"""The kernels the translated functions call, made fresh by each test: the functions
are module-level, not closures, which SOT translates whole instead of splitting."""


def launch_block(x: Any, y: Any) -> Any:
    z = paddle.full_like(x, float("nan"))
    MADE["kernel"](x, y, z, 16)
    return z * 2 + x


def functional_block(x: Any, y: Any) -> Any:
    return MADE["function"](x, y * 3) - y


def ops_block(a: Any, b: Any, v: Any) -> Any:
    product = ops.mm(a, b)
    return ops.softmax(ops.add(product, v) * 0.5, dim=-1) + 1


def add_block(x: Any, y: Any) -> Any:
    return ops.add(x, y) * 2


def test_a_kernels_first_call_inside_to_static_runs_it_in_dynamic_mode() -> None:
    MADE["kernel"] = ninetoothed.make(tiles, add, (Tensor(1), Tensor(1), Tensor(1)))
    x, y = randn(70), randn(70)  # blocks of 16: 5 programs, the last one partial
    check_static(launch_block, (f64(x) + f64(y)) * 2 + f64(x), x, y)


def test_a_functional_kernels_first_call_inside_to_static(poisoned: None) -> None:
    kernel = ninetoothed.make(
        meta_tiles, add, (Tensor(1), Tensor(1), Tensor(1)), configs=[{"BLOCK": 16}]
    )
    MADE["function"] = ninetoothed.functional(kernel)
    x, y = randn(70), randn(70)
    check_static(functional_block, f64(x) + 2 * f64(y), x, y)


def test_library_ops_first_calls_inside_to_static(poisoned: None) -> None:
    a, b, v = randn(40, 48), randn(48, 24), randn(40, 24)  # mm: 3 x 2 programs
    logits = (f64(a) @ f64(b) + f64(v)) * 0.5
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    check_static(ops_block, softmax + 1, a, b, v)


@pytest.fixture
def stubbed_gpu(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Kernels take the GPU's path on CPU tensors (the fast path after a first call), their
    launches recorded (the returned list), not run: Paddle's GPU build is not here."""
    launches: list[tuple[Any, ...]] = []
    reads = HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=fastpath.host_reads(contextlib.nullcontext).key_reads,
        device_of=lambda tensor: 0,
        raw_stream=lambda index: 0,
        current_device=None,
        device_guard=lambda index: contextlib.nullcontext(),
    )
    describe = PaddleAdapter.describe

    def launch_of(launcher: Any, bound: Any, prepared: Any, device: Any, _: Any) -> Any:
        return lambda stream, *per_call: launches.append(per_call)

    monkeypatch.setattr(TritonKernel, "interpreting", property(lambda self: False))
    monkeypatch.setattr(
        PaddleAdapter, "describe", lambda self, obj: describe(self, obj)._replace(device="cuda:0")
    )
    monkeypatch.setattr(
        PaddleAdapter, "fast_path", lambda self, kernel, miss: kernel.fast_launcher(reads, miss)
    )
    monkeypatch.setattr(PaddleAdapter, "launch_stream", lambda self, device: 0)
    monkeypatch.setattr(PaddleAdapter, "device_guard", lambda self, device: None)
    monkeypatch.setattr(FastLauncher, "_configuration", lambda self, call: None)
    monkeypatch.setattr(FastLauncher, "_launch_of", launch_of)
    return launches


def test_a_warm_kernels_fast_path_inside_to_static(stubbed_gpu: list[tuple[Any, ...]]) -> None:
    """On the GPU a kernel's call is its fast path after the first one: SOT runs it too."""
    MADE["kernel"] = kernel = ninetoothed.make(tiles, add, (Tensor(1), Tensor(1), Tensor(1)))
    x, y = randn(70), randn(70)
    launch_block(x, y)
    launch_block(x, y)
    assert kernel.fast_path is not None
    static = paddle.jit.to_static(launch_block)
    for _ in range(3):
        stubbed_gpu.clear()
        static(x, y)
        assert len(stubbed_gpu) == 1
        assert stubbed_gpu[0][:2] == (x.data_ptr(), y.data_ptr())


STRICT = """
import paddle
from paddle.jit.sot.utils.envs import strict_mode_guard
from paddle.jit.sot.utils.exceptions import FallbackError
import ninetoothed
from ninetoothed import Symbol, Tensor
from nt_paddle import ops

def tiles(x, y, z):
    BLOCK = Symbol("BLOCK", constexpr=True)
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))

def add(x, y, z):
    z = x + y

kernel = ninetoothed.make(tiles, add, (Tensor(1), Tensor(1), Tensor(1)))

def launch(x, y):
    z = paddle.full_like(x, float("nan"))
    kernel(x, y, z, 16)
    return z

def op(x, y):
    return ops.add(x, y) * 2

x, y = paddle.randn([40]), paddle.randn([40])
for block in (launch, op):
    with strict_mode_guard(True):
        try:
            paddle.jit.to_static(block)(x, y)
        except FallbackError as error:
            print(block.__name__, "stopped:", str(error).splitlines()[0])
"""


def test_sot_stops_at_the_call_guard_in_a_fresh_process(tmp_path: Path) -> None:
    """In SOT's strict mode a fallback raises: a process's first kernel call and first op
    end at the guard (SOT keeps what it learnt of shared code, so a new process)."""
    script = tmp_path / "strict.py"  # a file: kernels' applications are read from source
    script.write_text(STRICT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stops = [line for line in done.stdout.splitlines() if "stopped:" in line]
    assert stops == [
        "launch stopped: Fallback by psdb.fallback (recursive=True)",
        "op stopped: Fallback by psdb.fallback (recursive=True)",
    ], done.stdout + done.stderr[-3000:]
