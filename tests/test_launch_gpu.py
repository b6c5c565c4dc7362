"""The launch and tuning engine on a GPU, with the real tuning spaces (issue 12, issue 11.1).

Run by ``nox -s gpu`` (``tools/gpu_tests.py``), which limits every other test
to one configuration per kernel: these tests unset that limit, so a space that
hangs, crashes or corrupts data fails here.  The first calls of attention and
the 4096³ matmul run in fresh processes with cold caches and a time limit (the
device may lack pytest-timeout); the matmul's choice is compared with an
exhaustive search of its space (``benchmarks/launch_tuning.py``).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import ninetoothed  # noqa: E402
from ninetoothed import Tensor  # noqa: E402

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")]
if importlib.util.find_spec("pytest_timeout") is not None:
    pytestmark.append(pytest.mark.timeout(600))


@pytest.fixture(autouse=True)
def real_space(monkeypatch, tmp_path):
    """The real tuning space (not the GPU suite's one configuration), a fresh table."""
    monkeypatch.delenv("NINETOOTHED_MAX_NUM_CONFIGS", raising=False)
    monkeypatch.setenv("NINETOOTHED_TUNING", "on")
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))


ATTENTION = """
import json, sys, time
sys.path[:0] = [".", "tests"]
import torch
import ninetoothed
from ninetoothed import Tensor
from upstream import test_attention as attention
options = (None, None, {"constexpr": True}, {"constexpr": True, "upper_bound": 128})
tensors = tuple(Tensor(4, shape_options=options) for _ in range(4))
kernel = ninetoothed.make(attention.arrangement, attention.application, tensors)
q, k, v = (torch.randn(2, 4, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
o = torch.empty_like(q)
torch.cuda.synchronize()
began = time.perf_counter()
kernel(q, k, v, o)
torch.cuda.synchronize()
first = time.perf_counter() - began
expected = attention.reference(q, k, v)  # float64; the kernel does not scale by 1/sqrt(d)
error = float((o.double() - expected).abs().max())
print(json.dumps({"seconds": first, "error": error, "chosen": str(kernel.generated.best_config),
                  "configurations": len(kernel.generated.configurations)}))
"""


def _fresh_process(code: str, timeout: float, tmp_path: Path) -> dict:
    """Run ``code`` in a fresh interpreter with cold NineToothed and Triton caches; a hang fails
    here (the device may lack pytest-timeout)."""
    import launch  # benchmarks/launch.py

    caches = {
        "NINETOOTHED_CACHE_DIR": str(tmp_path / "nt"),
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
    }
    try:
        return launch.python(code, caches, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the first call did not finish in {timeout} s: the tuning space hangs")


def test_upstream_attention_tunes_its_real_space_without_hanging(tmp_path):
    """Upstream's attention (head dimension constexpr, upper bound 128) once made a space whose
    first configuration never compiled; upstream's first call takes 16 s."""
    answer = _fresh_process(ATTENTION, 180, tmp_path)
    print(f"attention first call, cold caches: {answer}")
    assert answer["configurations"] > 1
    assert answer["error"] < 3e-2
    assert answer["seconds"] < 60, answer


def test_matmul_4096_cubed_first_call_and_choice(tmp_path):
    """Cold caches, the real space; the choice against an exhaustive do_bench of the space."""
    import launch

    answer = _fresh_process(launch.FIRST_CALL.replace("EXHAUSTIVE", "True"), 400, tmp_path)
    answer.pop("all_ms", None)
    print(f"matmul 4096^3 first call, cold caches: {answer}")
    assert answer["error"] < 1.0
    assert answer["seconds"] < 30, f"issue 12 asks 10 s: {answer}"
    # The issue asks within 2 % of the exhaustive best: benchmarks/launch.py measures
    # that alone on the GPU. Here other tests share the GPU, so only a gross miss fails.
    assert answer["chosen_ms"] <= answer["best_ms"] * 1.5, answer
    warm = _fresh_process(launch.FIRST_CALL.replace("EXHAUSTIVE", "False"), 120, tmp_path)
    print(f"matmul 4096^3 first call, second process: {warm}")
    assert warm["seconds"] < 3, f"issue 12 asks 1 s: {warm}"


def _add_in_place():
    def arrangement(z, x, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
        return z.tile((BLOCK_SIZE,)), x.tile((BLOCK_SIZE,))

    def application(z, x):
        z = z + x  # noqa: F841

    return ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_tuning_leaves_an_in_place_kernel_as_one_run_would():
    kernel = _add_in_place()
    assert len(kernel.generated.configurations) > 1
    z = torch.zeros(1 << 20, device="cuda")
    x = torch.ones_like(z)
    kernel(z, x)
    torch.cuda.synchronize()
    assert torch.equal(z, x), f"z = {z.unique().tolist()} after one call (tuning ran on it)"
    # One tensor passed as both parameters, on a fresh kernel (so the call tunes): w + w once.
    w = torch.ones(1 << 20, device="cuda")
    _add_in_place()(w, w)
    torch.cuda.synchronize()
    assert torch.equal(w, 2 * x), f"w = {w.unique().tolist()} after one call (tuning ran on it)"


def test_first_calls_from_two_threads_tune_once_and_agree():
    kernel = _add_in_place()
    tensors = [(torch.zeros(1 << 18, device="cuda"), torch.ones(1 << 18, device="cuda"))]
    tensors.append((tensors[0][0].clone(), tensors[0][1].clone()))
    errors = []

    def first(z, x):
        try:
            kernel(z, x)
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=first, args=pair) for pair in tensors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    torch.cuda.synchronize()
    assert not errors
    for z, x in tensors:
        assert torch.equal(z, x)


@pytest.mark.parametrize("way", ["tuned", "constexpr", "pinned"])
def test_the_fast_path_launches_correctly_and_captures_in_a_cuda_graph(way):
    from support.tutorial import add

    tensors = (Tensor(1), Tensor(1), Tensor(1))
    keywords = {}
    if way == "tuned":
        kernel = ninetoothed.make(add.arrangement, add.application, tensors)
    elif way == "constexpr":
        arrangement = functools.partial(add.arrangement, BLOCK_SIZE=add.CONSTEXPR_BLOCK_SIZE)
        kernel = ninetoothed.make(arrangement, add.application, tensors)
        keywords = {"BLOCK_SIZE": 1024}
    else:
        kernel = ninetoothed.make(
            add.arrangement, add.application, tensors, configs=[{"BLOCK_SIZE": 512}]
        )
    x, y = (torch.randn(4097, device="cuda", dtype=torch.float16) for _ in range(2))
    out = torch.empty_like(x)
    for _ in range(3):  # the miss, then the hot path
        out.zero_()
        kernel(x, y, out, **keywords)
        torch.testing.assert_close(out, x + y)
    assert kernel.fast_path is not None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kernel(x, y, out, **keywords)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(x, y, out, **keywords)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    with pytest.raises(ninetoothed.errors.LaunchError, match="do not fit|dimensions|shape"):
        kernel(x, y[:-1].reshape(64, 64), out, **keywords)


@pytest.mark.skipif(
    not ON_GPU or torch.cuda.device_count() < 2, reason="needs a second GPU (cuda:1)"
)
def test_launches_on_the_arguments_device_and_its_current_stream():
    from support.tutorial import add

    kernel = ninetoothed.make(add.arrangement, add.application, (Tensor(1), Tensor(1), Tensor(1)))
    torch.cuda.set_device(0)
    for device in ("cuda:1", "cuda:0", "cuda:1"):
        x, y = (torch.randn(5000, device=device) for _ in range(2))
        out = torch.empty_like(x)
        kernel(x, y, out)
        kernel(x, y, out)
        torch.cuda.synchronize(device)
        torch.testing.assert_close(out, x + y)
        # The input is written on a side stream of the tensors' device after a
        # long sleep: a launch on any other stream (or device) would read it
        # before it is written.
        side = torch.cuda.Stream(device=device)
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)
            x.fill_(2.0)
            kernel(x, y, out)
        side.synchronize()
        torch.testing.assert_close(out, y + 2.0)


def test_jax_in_place_kernel_is_tuned_without_changing_its_result():
    jax = pytest.importorskip("jax")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("jax has no GPU backend here")
    import jax.numpy as jnp

    kernel = _add_in_place()
    z = jax.device_put(jnp.zeros(1 << 20, dtype=jnp.float32), gpu)
    x = jax.device_put(jnp.ones(1 << 20, dtype=jnp.float32), gpu)
    eager = kernel(z, x)
    jitted = jax.jit(lambda a, b: kernel(a, b))(z, x)
    assert bool(jnp.all(eager == 1)), f"eager: {jnp.unique(eager)}"
    assert bool(jnp.all(jitted == 1)), f"jax.jit: {jnp.unique(jitted)}"


@pytest.mark.parametrize("bound", [32, 64, 128, 256])
def test_every_attention_configuration_computes_right(bound):
    """The library's attention tunes over a measured list per head bound: each entry,
    pinned alone, computes the same as torch on ragged lengths (several query blocks
    and a masked last key block), causal and not, so no entry that corrupts data or
    fails to compile can hide behind another that wins the tuning."""
    import torch.nn.functional as F

    from ninetoothed.library import scaled_dot_product_attention as sdpa

    premade = sdpa.premake(head_bound=bound)
    generator = torch.Generator(device="cuda").manual_seed(bound)
    q, k, v = (
        torch.randn(2, 3, 300, bound, device="cuda", dtype=torch.float16, generator=generator)
        for _ in "qkv"
    )
    for config in sdpa.configurations(bound):
        kernel = ninetoothed.make(
            premade.arrangement, premade.application, premade.tensors, configs=[config]
        )
        for causal in (False, True):
            o = torch.full_like(q, float("nan"))
            kernel(q, k, v, bound**-0.5, causal, o)
            expected = F.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=causal
            )
            error = float((o.float() - expected).abs().max())
            assert error < 1e-2, f"{config}, causal={causal}: max error {error}"
