"""An application Triton's GPU compiler rejects, called on a GPU: a LaunchError that
names the application and shows the compiler's marked line, on every launch path.

Under the interpreter ``make`` catches these first (``tests/test_gpu_check.py``);
on a GPU nothing runs at ``make``, so the first call compiles and must say
what went wrong in the user's terms: tuned (every configuration fails in the
tuner's compile workers) and pinned (the fast path compiles the one given),
eager JAX (jax-triton compiles in the call) and JAX under ``jax.jit`` (XLA's
lowering compiles later, outside the kernel's call: the call runs Triton's
front end first).
"""

from __future__ import annotations

import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")

import ninetoothed  # noqa: E402
from ninetoothed import Tensor, block_size  # noqa: E402
from ninetoothed.errors import LaunchError  # noqa: E402

ON_GPU = torch.cuda.is_available() and os.environ.get("NT_TEST_GPU") == "1"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")]


def arrangement(x, y, BLOCK=block_size()):  # noqa: B008
    return x.tile((BLOCK,)), y.tile((BLOCK,))


def list_of_tiles(x, y):
    pair = [x for _ in range(2)]
    y = pair[0]  # noqa: F841


@pytest.mark.parametrize("pinned", [{}, {"BLOCK": 128}], ids=["tuned", "pinned"])
def test_a_rejected_application_names_itself(pinned, monkeypatch, tmp_path):
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    kernel = ninetoothed.make(arrangement, list_of_tiles, (Tensor(1), Tensor(1)))
    x = torch.randn(1000, device="cuda")
    y = torch.empty_like(x)
    with pytest.raises(LaunchError) as caught:
        kernel(x, y, **pinned)
    message = str(caught.value)
    line = list_of_tiles.__code__.co_firstlineno
    assert f"the application is list_of_tiles at {__file__}:{line}" in message
    assert "pair = [x_tile" in message and "^" in message


@pytest.mark.parametrize("pinned", [{}, {"BLOCK": 128}], ids=["tuned", "pinned"])
def test_eager_jax_names_the_application_too(pinned, monkeypatch, tmp_path):
    jnp = pytest.importorskip("jax.numpy")
    # Not importorskip: importing jax_triton 0.3.1 blanks TRITON_CACHE_DIR, which
    # the adapter restores when it imports it, and a bare import here would not.
    if importlib.util.find_spec("jax_triton") is None:
        pytest.skip("jax-triton is not installed")
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    kernel = ninetoothed.make(arrangement, list_of_tiles, (Tensor(1), Tensor(1)))
    with pytest.raises(LaunchError) as caught:
        kernel(jnp.ones(1000), jnp.empty(1000), **pinned)
    message = str(caught.value)
    assert "the application is list_of_tiles at" in message
    assert "pair = [x_tile" in message, "the kernel's own line, not the trampoline's"


@pytest.mark.parametrize("pinned", [{}, {"BLOCK": 128}], ids=["tuned", "pinned"])
def test_jax_jit_names_the_application_too(pinned, monkeypatch, tmp_path):
    jax = pytest.importorskip("jax")
    if importlib.util.find_spec("jax_triton") is None:  # see the eager test
        pytest.skip("jax-triton is not installed")
    monkeypatch.setenv("NINETOOTHED_CACHE_DIR", str(tmp_path))
    kernel = ninetoothed.make(arrangement, list_of_tiles, (Tensor(1), Tensor(1)))
    traced = jax.jit(lambda x, y: kernel(x, y, **pinned))
    with pytest.raises(LaunchError) as caught:
        traced(jax.numpy.ones(1000), jax.numpy.empty(1000))
    message = str(caught.value)
    assert "the application is list_of_tiles at" in message
    assert "pair = [x_tile" in message, "the kernel's own line, not the trampoline's"
