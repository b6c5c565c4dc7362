"""Eager JAX calls go through a jitted launch kept per specialisation (``nt_jax.eager``).

Traces are counted: a repeated call must not trace the launch again, a new
shape, dtype, static argument or keyword must (and compute the right thing);
under ``jax.jit`` the adapter runs once per trace.  Outputs are fresh arrays
(JAX), compared with numpy references on fresh random inputs; the grids have
several programs (BLOCK_SIZE pinned to 16 where it matters).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ninetoothed
from ninetoothed import Tensor
from ninetoothed.errors import LaunchError
from nt_jax import adapter as jax_adapter
from nt_jax.adapter import JaxAdapter
from nt_jax.eager import EagerCalls

pytestmark = pytest.mark.interpreter_only

RNG = np.random.default_rng(7)


def arrangement(x, alpha, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    return x.tile((BLOCK_SIZE,)), alpha, z.tile((BLOCK_SIZE,))


def application(x, alpha, z):
    z = x * alpha  # noqa: F841


def made() -> Any:
    """A kernel no other test called (its eager launches start empty)."""
    return ninetoothed.make(arrangement, application, (Tensor(1), Tensor(0), Tensor(1)))


def eager_of(kernel: Any) -> EagerCalls:
    found: EagerCalls = getattr(kernel.generated, jax_adapter.EAGER_ATTRIBUTE)
    return found


def data(size: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(size).astype(dtype)


def struct(size: int, dtype: Any = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((size,), dtype)


def check(kernel: Any, size: int, alpha: float, dtype: Any = np.float32, **keywords: Any) -> None:
    x = data(size, dtype)
    result = kernel(jnp.asarray(x), alpha, struct(size, dtype), **keywords)
    assert result.shape == (size,) and result.dtype == dtype
    expected = (x.astype(np.float64) * alpha).astype(dtype)
    np.testing.assert_allclose(
        np.asarray(result), expected, rtol=1e-3 if dtype == np.float16 else 1e-6
    )


def test_repeated_eager_calls_trace_once() -> None:
    kernel = made()
    for _ in range(3):
        check(kernel, 100, 2.5)
    eager = eager_of(kernel)
    assert eager.traces == 1
    assert len(eager.by_types) == 1


def test_a_new_shape_dtype_static_value_or_keyword_traces_again() -> None:
    kernel = made()
    check(kernel, 100, 2.5)
    check(kernel, 37, 2.5)  # shape
    assert eager_of(kernel).traces == 2
    check(kernel, 37, 2.5, np.float16)  # dtype
    assert eager_of(kernel).traces == 3
    check(kernel, 37, -1.5, np.float16)  # a scalar's value (static)
    assert eager_of(kernel).traces == 4
    check(kernel, 37, -1.5, np.float16, BLOCK_SIZE=16)  # pinned meta value
    assert eager_of(kernel).traces == 5
    for size, alpha, dtype in ((100, 2.5, np.float32), (37, -1.5, np.float16)):
        check(kernel, size, alpha, dtype)  # seen before: no trace
    assert eager_of(kernel).traces == 5


def test_a_call_that_fails_validation_keeps_nothing() -> None:
    kernel = made()
    with pytest.raises(LaunchError):
        kernel(jnp.ones((4, 4)), 1.0, struct(4))  # wrong rank
    assert eager_of(kernel).by_types == {}
    with pytest.raises(LaunchError):
        kernel(jnp.ones(4), [1.0], struct(4))  # unhashable, and not a scalar
    assert eager_of(kernel).by_types == {}
    check(kernel, 20, 3.0)


def test_an_unknown_keyword_is_reported_by_validation() -> None:
    kernel = made()
    check(kernel, 20, 3.0)
    with pytest.raises(LaunchError, match="BLOCK_SIZ"):
        kernel(jnp.ones(4), 1.0, struct(4), BLOCK_SIZ=16)


def test_under_jit_the_adapter_runs_once_per_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = made()
    calls = []
    launch = JaxAdapter._call

    def counted(self: JaxAdapter, *args: Any) -> Any:
        calls.append(1)
        return launch(self, *args)

    monkeypatch.setattr(JaxAdapter, "_call", counted)
    jitted = jax.jit(lambda x: kernel(x, 0.5, struct(64)))
    for _ in range(3):
        x = data(64)
        np.testing.assert_allclose(np.asarray(jitted(jnp.asarray(x))), x * 0.5, rtol=1e-6)
    assert len(calls) == 1
    assert eager_of(kernel).by_types == {}  # tracers never make an eager launch


def test_the_gpu_fast_path_is_the_eager_launches() -> None:
    kernel = made()
    missed = []
    fast = JaxAdapter().fast_path(kernel.generated, lambda args, kwargs: missed.append(args))
    assert fast is eager_of(kernel)
    fast.call(jnp.ones(4), 1.0, struct(4))  # no launch yet for this pattern: a miss
    assert len(missed) == 1
    check(kernel, 8, 1.0)  # kept by the adapter's call
    x = data(50)
    result = fast.call(jnp.asarray(x), 2.0, struct(50))
    np.testing.assert_allclose(np.asarray(result), x * 2.0, rtol=1e-6)
    assert len(missed) == 1


def test_a_bad_call_of_a_known_pattern_gets_the_clear_error() -> None:
    kernel = made()
    check(kernel, 16, 2.0)
    with pytest.raises(LaunchError, match="shape"):
        kernel(jnp.ones(16), 2.0, struct(17))  # the output's size disagrees
    check(kernel, 16, 2.0)
    assert eager_of(kernel).traces == 2  # the bad call traced, and kept nothing
