"""Tests of the JAX adapter, under Triton's interpreter on the CPU (no GPU needed).

The GPU path through jax-triton is tested without a GPU by building the
arguments of ``jax_triton.triton_call`` for a bound call and running the
trampoline they name through the interpreter the way jax-triton 0.3/0.4 would
call it (positional arguments, then output pointers, then meta-parameters).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
import nt_jax
from ninetoothed import Tensor
from ninetoothed.errors import DeclaredDtypeWarning, LaunchError
from ninetoothed.runtime.binding import bind_call
from nt_jax import triton_call
from nt_jax.adapter import JaxAdapter
from nt_jax.roles import roles
from nt_jax.triton_call import TrampolineLayout, plan_triton_call, trampoline_for

pytestmark = pytest.mark.interpreter_only

ADAPTER = JaxAdapter()
RNG = np.random.default_rng(0)


def arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    """Tile three vectors into blocks of one meta size."""
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def application(x, y, z):
    """``z = x + y``, block by block."""
    z = x + y  # noqa: F841


def two_outputs_arrangement(x, y, s, d, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    return tuple(t.tile((BLOCK_SIZE,)) for t in (x, y, s, d))


def two_outputs_application(x, y, s, d):
    """Sum and difference."""
    s = x + y  # noqa: F841
    d = x - y  # noqa: F841


def accumulate_arrangement(x, z):
    """Fixed blocks of 16: no meta symbols, so no auto-tuning."""
    return x.tile((16,)), z.tile((16,))


def accumulate_application(x, z):
    """``z += x``: reads and writes ``z``."""
    z += x  # noqa: F841


def scale_arrangement(x, alpha, z, BLOCK_SIZE=ninetoothed.block_size()):  # noqa: B008
    return x.tile((BLOCK_SIZE,)), alpha, z.tile((BLOCK_SIZE,))


def scale_application(x, alpha, z):
    """``z = x * alpha`` with a scalar parameter."""
    z = x * alpha  # noqa: F841


kernel = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
typed_kernel = ninetoothed.make(
    arrangement,
    application,
    (Tensor(1, dtype=ntl.float32), Tensor(1, dtype=ntl.float32), Tensor(1, dtype=ntl.float32)),
)
two_outputs = ninetoothed.make(
    two_outputs_arrangement, two_outputs_application, tuple(Tensor(1) for _ in range(4))
)
accumulate = ninetoothed.make(
    accumulate_arrangement, accumulate_application, (Tensor(1), Tensor(1))
)
scale = ninetoothed.make(scale_arrangement, scale_application, (Tensor(1), Tensor(0), Tensor(1)))


def copy_application(x, y, z):
    """``z = x``: moves bits without arithmetic (``y`` is unused)."""
    z = x  # noqa: F841


copy_kernel = ninetoothed.make(arrangement, copy_application, (Tensor(1), Tensor(1), Tensor(1)))


def data(size: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(size).astype(dtype)


def struct(size: int, dtype: Any = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((size,), dtype)


# ---------------------------------------------------------------- the package


def test_package_reexports_make_and_jit() -> None:
    assert nt_jax.make is ninetoothed.make
    assert nt_jax.jit is ninetoothed.jit
    assert nt_jax.__version__ == "0.1.0"
    assert (ADAPTER.name, ADAPTER.distribution) == ("jax", "nt-jax")


# ---------------------------------------------------------------- calls


@pytest.mark.parametrize("size", [1, 17, 1000])
def test_vector_add_returns_z(size: int) -> None:
    x, y = data(size), data(size)
    z = jnp.full(size, jnp.nan, jnp.float32)
    result = kernel(jnp.asarray(x), jnp.asarray(y), z)
    assert isinstance(result, jax.Array) and result.shape == (size,)
    np.testing.assert_allclose(
        np.asarray(result), x.astype(np.float64) + y.astype(np.float64), rtol=1e-6
    )
    assert np.isnan(np.asarray(z)).all(), "the array passed in is not modified"


@pytest.mark.parametrize("size", [1, 17, 1000])
def test_vector_add_under_jit(size: int) -> None:
    x, y = data(size), data(size)

    @jax.jit
    def f(a: jax.Array, b: jax.Array) -> jax.Array:
        return kernel(a * 2, b, jnp.empty_like(a)) + 1

    result = f(jnp.asarray(x), jnp.asarray(y))
    expected = 2 * x.astype(np.float64) + y.astype(np.float64) + 1
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-6, atol=1e-6)


def test_shape_dtype_struct_output_eager_and_jit() -> None:
    x, y = data(33), data(33)
    eager = kernel(jnp.asarray(x), jnp.asarray(y), struct(33))
    jitted = jax.jit(lambda a, b: kernel(a, b, jax.ShapeDtypeStruct(a.shape, a.dtype)))(
        jnp.asarray(x), jnp.asarray(y)
    )
    np.testing.assert_allclose(np.asarray(eager), x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jitted), x + y, rtol=1e-6)


def test_two_outputs_return_a_tuple_in_parameter_order() -> None:
    x, y = data(50), data(50)
    s, d = two_outputs(jnp.asarray(x), jnp.asarray(y), struct(50), jnp.zeros(50, jnp.float32))
    np.testing.assert_allclose(np.asarray(s), x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(d), x - y, rtol=1e-6)


def test_read_write_output_keeps_initial_contents() -> None:
    x, z = data(40), data(40)
    result = accumulate(jnp.asarray(x), jnp.asarray(z))
    np.testing.assert_allclose(np.asarray(result), z + x, rtol=1e-6)
    jitted = jax.jit(accumulate)(jnp.asarray(x), jnp.asarray(z))
    np.testing.assert_allclose(np.asarray(jitted), z + x, rtol=1e-6)


def test_scalar_parameter_and_pinned_meta_symbol() -> None:
    x = data(100)
    (meta,) = scale.spec.meta_symbols
    result = scale(jnp.asarray(x), 2.5, struct(100), **{meta: 32})
    np.testing.assert_allclose(np.asarray(result), x * 2.5, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "int8", "uint8"])
def test_dtypes_round_trip(dtype: str) -> None:
    np_dtype = jnp.dtype(dtype)
    x = (RNG.integers(0, 8, 64)).astype(np_dtype)
    y = (RNG.integers(0, 8, 64)).astype(np_dtype)
    result = kernel(jnp.asarray(x), jnp.asarray(y), jax.ShapeDtypeStruct((64,), np_dtype))
    assert result.dtype == np_dtype
    expected = x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_array_equal(np.asarray(result).astype(np.float64), expected)


def test_bfloat16_round_trip() -> None:
    """bfloat16 bits reach the kernel and come back (numpy has no bfloat16 of its own).

    A copy, compared bit for bit (bfloat16 arithmetic: tests/test_interpreted_bfloat16.py).
    """
    x = RNG.standard_normal(37).astype(jnp.bfloat16)
    for z in (jax.ShapeDtypeStruct((37,), jnp.bfloat16), jnp.zeros(37, jnp.bfloat16)):
        result = copy_kernel(jnp.asarray(x), jnp.asarray(x), z)
        assert result.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(result).view(np.uint16), x.view(np.uint16))


def test_buffer_callback_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher used on a GPU without jax-triton, run under the interpreter."""
    monkeypatch.setenv(triton_call.LAUNCHER_VARIABLE, "callback")
    x, y = data(70), data(70)
    s, d = two_outputs(jnp.asarray(x), jnp.asarray(y), struct(70), jnp.zeros(70, jnp.float32))
    np.testing.assert_allclose(np.asarray(s), x + y, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(d), x - y, rtol=1e-6)
    z = data(40)
    result = jax.jit(accumulate)(jnp.asarray(x[:40]), jnp.asarray(z))
    np.testing.assert_allclose(np.asarray(result), z + x[:40], rtol=1e-6)


def test_bad_launcher_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(triton_call.LAUNCHER_VARIABLE, "cuda-graphs")
    with pytest.raises(LaunchError, match="NINETOOTHED_JAX_LAUNCHER"):
        kernel(jnp.ones(4), jnp.ones(4), struct(4))


# ---------------------------------------------------------------- describe


@pytest.mark.parametrize(
    "dtype",
    ["float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8", "bool"],
)
def test_describe_dtype_names(dtype: str) -> None:
    info = ADAPTER.describe(jnp.zeros((2, 3, 4), dtype))
    assert info.dtype == dtype
    assert info.shape == (2, 3, 4)
    assert info.strides == (12, 4, 1)
    assert info.device == "cpu"
    assert info.data_ptr != 0


def test_describe_tracers_and_structs() -> None:
    seen = []

    @jax.jit
    def f(a: jax.Array) -> jax.Array:
        seen.append(ADAPTER.describe(a))
        return a

    f(jnp.zeros((5, 2), jnp.bfloat16))
    (traced,) = seen
    assert (traced.shape, traced.strides, traced.dtype, traced.data_ptr) == (
        (5, 2),
        (2, 1),
        "bfloat16",
        0,
    )
    assert traced.device == "cpu"
    info = ADAPTER.describe(
        jax.ShapeDtypeStruct((3,), jnp.int64 if jax.config.x64_enabled else jnp.int32)
    )
    assert info.shape == (3,) and info.data_ptr == 0


def test_recognizes() -> None:
    assert ADAPTER.recognizes(jnp.zeros(1))
    assert ADAPTER.recognizes(struct(1))
    assert not ADAPTER.recognizes(np.zeros(1))
    assert not ADAPTER.recognizes(torch.zeros(1))


# ---------------------------------------------------------------- errors


def test_wrong_argument_count() -> None:
    with pytest.raises(LaunchError, match="takes 3 positional arguments"):
        kernel(jnp.ones(4), jnp.ones(4))


def test_wrong_rank() -> None:
    with pytest.raises(LaunchError, match="expects 1 dimensions"):
        kernel(jnp.ones((4, 4)), jnp.ones(4), struct(4))


def test_a_dtype_other_than_declared_runs_with_a_warning() -> None:
    """As upstream's just-in-time kernels, the arguments' dtypes rule (see
    ``DeclaredDtypeWarning``); the warning names parameter, declared and given dtype."""
    x, y = jnp.arange(4, dtype=jnp.float32), jnp.arange(4, dtype=jnp.float16) / 4
    with pytest.warns(DeclaredDtypeWarning, match="'y' expects dtype float32, got float16"):
        result = typed_kernel(x, y, struct(4))
    np.testing.assert_allclose(np.asarray(result), np.asarray(x) + np.asarray(y, np.float32))
    with pytest.warns(DeclaredDtypeWarning, match="'z' expects dtype float32, got int32"):
        result = typed_kernel(x + 0.25, x, struct(4, jnp.int32))
    assert result.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(result), 2 * np.arange(4))


def test_wrong_output_struct_rank() -> None:
    with pytest.raises(LaunchError, match="'z' expects 1 dimensions"):
        kernel(jnp.ones(4), jnp.ones(4), jax.ShapeDtypeStruct((4, 1), jnp.float32))


def test_wrong_output_struct_shape() -> None:
    small = ninetoothed.make(accumulate_arrangement, application_copy, (Tensor(1), Tensor(1)))
    with pytest.raises(LaunchError, match=r"'x' \(shape \(64,\).*'z' \(shape \(16,\)"):
        small(jnp.ones(64), struct(16))


def application_copy(x, z):
    z = x  # noqa: F841


def test_struct_for_an_input_is_an_error() -> None:
    with pytest.raises(LaunchError, match="'x' is not an output"):
        kernel(struct(4), jnp.ones(4), struct(4))


def test_struct_for_a_read_write_output_is_an_error() -> None:
    assert "z" in accumulate.generated.inputs
    with pytest.raises(LaunchError, match="also read"):
        accumulate(jnp.ones(16), struct(16))


def test_unsupported_dtype() -> None:
    with pytest.raises(LaunchError, match="complex64"):
        kernel(jnp.ones(4, jnp.complex64), jnp.ones(4, jnp.complex64), struct(4, jnp.complex64))


def test_mixed_frameworks() -> None:
    fresh = ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    with pytest.raises(LaunchError, match="cannot mix tensors of two frameworks"):
        fresh(jnp.ones(4), torch.ones(4), struct(4))
    # Once a kernel has dispatched on JAX arrays it skips the mixing check, and
    # the JAX adapter's own validation names the foreign argument.  Dispatch
    # here: the test must not depend on another having run first.
    kernel(jnp.ones(4), jnp.ones(4), struct(4))
    with pytest.raises(LaunchError, match="'y' expects a jax tensor"):
        kernel(jnp.ones(4), torch.ones(4), struct(4))


def test_scalar_given_an_array() -> None:
    with pytest.raises(LaunchError, match="'alpha' is a scalar"):
        scale(jnp.ones(4), jnp.ones(()), struct(4))


def fresh_kernel() -> Any:
    """The add kernel made anew: no earlier test's call has cached its eager launch,
    as in a program whose first call meets the situation."""
    return ninetoothed.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


def test_cpu_arrays_without_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    add = fresh_kernel()
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(LaunchError, match="TRITON_INTERPRET=1"):
        add(jnp.ones(4), jnp.ones(4), struct(4))


def test_interpreter_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    add = fresh_kernel()
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(LaunchError, match=r"needs PyTorch.*nt-jax\[interpreter\]"):
        add(jnp.ones(4), jnp.ones(4), struct(4))


def test_missing_jax_triton_names_the_gpu_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax_triton", None)
    with pytest.raises(LaunchError, match=r"nt-jax\[gpu\]"):
        triton_call.import_jax_triton("application")
    monkeypatch.delenv(triton_call.LAUNCHER_VARIABLE, raising=False)
    assert triton_call.gpu_launcher() == "callback"


# ---------------------------------------------------------------- the jax-triton plan


def bind(kernel_: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Any:
    generated = kernel_.generated
    bound = bind_call(
        kernel_.spec,
        args,
        kwargs or {},
        framework="jax",
        recognizes=ADAPTER.recognizes,
        describe=ADAPTER.describe,
    )
    return generated, bound, roles(generated, bound)


class FakeAutotune:
    """Records what ``triton.autotune`` would be given; returns the function as is."""

    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []
        self.key: list[str] | None = None

    def __call__(self, configs: list[dict[str, Any]], key: list[str]) -> Any:
        self.configs, self.key = configs, key
        return lambda function: function

    @staticmethod
    def config(kwargs: dict[str, Any], num_warps: int, num_stages: int) -> dict[str, Any]:
        return dict(kwargs)


def simulate_jax_triton(plan: Any, version: tuple[int, ...], meta: dict[str, Any]) -> list[Any]:
    """Run ``plan`` through the interpreter as jax-triton ``version`` calls a kernel.

    Array arguments become torch tensors; each output is a new tensor, or the
    aliased input's tensor (XLA gives aliased operands and results one
    buffer); 0.3 passes every output's pointer after the arguments, 0.4 only
    the outputs that are not aliased.
    """
    # jax-triton hands scalars to its launcher as Python numbers (typed fp32
    # for np.float32); the interpreter takes Python numbers only.
    tensors = [
        torch.from_numpy(np.array(a)) if isinstance(a, jax.Array) else np.asarray(a).item()
        for a in plan.args
    ]
    array_indices = [i for i, a in enumerate(plan.args) if isinstance(a, jax.Array)]
    aliased = {}
    for index, output in plan.input_output_aliases.items():
        position = array_indices[index] if version < (0, 4) else index
        aliased[output] = tensors[position]
    outputs = [
        aliased.get(k, torch.full(s.shape, float("nan"), dtype=getattr(torch, str(s.dtype))))
        for k, s in enumerate(plan.out_shape)
    ]
    passed = [o for k, o in enumerate(outputs) if version < (0, 4) or k not in aliased]
    metaparams = {**plan.metaparams, **meta}
    grid = plan.grid(metaparams) if callable(plan.grid) else plan.grid
    plan.kernel[grid](*tensors, *passed, **metaparams)
    return [o.numpy() for o in outputs]


@pytest.mark.parametrize("version", [(0, 3, 1), (0, 4, 0)])
def test_plan_autotuned_kernel_with_struct_output(version: tuple[int, ...]) -> None:
    x, y = data(100), data(100)
    generated, bound, roles = bind(kernel, (jnp.asarray(x), jnp.asarray(y), struct(100)))
    fake = FakeAutotune()
    plan = plan_triton_call(
        generated,
        bound,
        roles,
        jax_triton_version=version,
        trampoline=trampoline_for,
        autotune=fake,
        config=fake.config,
    )
    assert fake.key == [
        "x_size_0",
        "x_stride_0",
        "y_size_0",
        "y_stride_0",
        "z_size_0",
        "z_stride_0",
    ]
    assert len(fake.configs) == len(generated.configurations)
    assert callable(plan.grid) and not plan.empty
    assert (plan.num_warps, plan.num_stages) == (None, None)
    assert plan.input_output_aliases == {}
    names = [name for name, _ in plan.layout.parameters]
    aligned = [f"ninetoothed_aligned_{i}" for i in range(3)]
    assert "z_pointer" not in names and names[-6:] == [
        "ninetoothed_output_0",
        "ninetoothed_int64",
        *aligned,
        *generated.spec.meta_symbols,
    ]
    # The host's constexprs, the sizes' alignments included (100 = 4 * 25), whatever
    # configuration jax-triton's autotuner then tries.
    assert plan.metaparams == {"ninetoothed_int64": False, **dict.fromkeys(aligned, 4)}
    (z,) = simulate_jax_triton(plan, version, fake.configs[-1])
    np.testing.assert_allclose(z, x + y, rtol=1e-6)


@pytest.mark.parametrize("version", [(0, 3, 1), (0, 4, 0)])
def test_plan_aliased_read_write_output(version: tuple[int, ...]) -> None:
    x, z0 = data(40), data(40)
    generated, bound, roles = bind(accumulate, (jnp.asarray(x), jnp.asarray(z0)))
    plan = plan_triton_call(
        generated, bound, roles, jax_triton_version=version, trampoline=trampoline_for
    )
    assert plan.grid == (3,) and not plan.empty
    assert plan.input_output_aliases == {1: 0}
    config = generated.configurations[0]
    assert (plan.num_warps, plan.num_stages) == (config.num_warps, config.num_stages)
    trailing = [n for n, _ in plan.layout.parameters if n.startswith("ninetoothed_output_")]
    assert trailing == (["ninetoothed_output_0"] if version < (0, 4) else [])
    (z,) = simulate_jax_triton(plan, version, {})
    np.testing.assert_allclose(z, z0 + x, rtol=1e-6)


def test_plan_scalars_pinned_meta_and_float_typing() -> None:
    x = data(50)
    (meta,) = scale.spec.meta_symbols
    generated, bound, roles = bind(scale, (jnp.asarray(x), 2.5, struct(50)), {meta: 16})
    legacy = plan_triton_call(
        generated, bound, roles, jax_triton_version=(0, 3, 1), trampoline=trampoline_for
    )
    assert legacy.grid == (4,) and legacy.metaparams[meta] == 16
    assert legacy.num_warps == 4 and legacy.num_stages == 3
    alpha = [a for a in legacy.args if not isinstance(a, (jax.Array, int))]
    assert alpha == [np.float32(2.5)] and isinstance(alpha[0], np.float32)
    (z,) = simulate_jax_triton(legacy, (0, 3, 1), {})
    np.testing.assert_allclose(z, x * 2.5, rtol=1e-6)
    current = plan_triton_call(
        generated, bound, roles, jax_triton_version=(0, 4, 0), trampoline=trampoline_for
    )
    scalars = [a for a in current.args if not isinstance(a, jax.Array)]
    assert 2.5 in scalars and not any(isinstance(a, np.float32) for a in scalars)


def test_plan_empty_grid_and_shape_mismatch() -> None:
    generated, bound, roles = bind(kernel, (jnp.ones(0), jnp.ones(0), struct(0)))
    plan = plan_triton_call(
        generated,
        bound,
        roles,
        jax_triton_version=(0, 3, 1),
        trampoline=trampoline_for,
        autotune=FakeAutotune(),
        config=FakeAutotune.config,
    )
    assert plan.empty
    # Mismatched shapes are refused by the binding, before any plan is made.
    with pytest.raises(LaunchError, match=r"'x' \(shape \(64,\).*'z' \(shape \(16,\)"):
        bind(accumulate, (jnp.ones(64), jnp.ones(16)))


def test_trampoline_source_and_cache() -> None:
    layout = TrampolineLayout(
        name="k_jax_triton",
        parameters=(("a", False), ("ninetoothed_output_0", False), ("B", True)),
        call=("a", "ninetoothed_output_0", "B"),
    )
    source = layout.source()
    assert "def k_jax_triton(a, ninetoothed_output_0, B: tl.constexpr):" in source
    assert "    ninetoothed_kernel(a, ninetoothed_output_0, B)\n" in source
    generated, bound, roles = bind(accumulate, (jnp.ones(16), jnp.ones(16)))
    first = plan_triton_call(
        generated, bound, roles, jax_triton_version=(0, 3, 1), trampoline=trampoline_for
    )
    again = plan_triton_call(
        generated, bound, roles, jax_triton_version=(0, 3, 1), trampoline=trampoline_for
    )
    assert first.kernel is again.kernel


@pytest.mark.parametrize(("size", "hinted"), [(48, ["x_size_0", "z_size_0"]), (40, [])])
def test_plan_states_what_tritons_launcher_would_specialise(size: int, hinted: list[str]) -> None:
    """Integers divisible by 16 are marked so in the trampoline, as Triton's launcher
    marks them (jax-triton marks only pointers); without it matmul ran 4.7x slower."""
    x, z0 = data(size), data(size)
    generated, bound, roles = bind(accumulate, (jnp.asarray(x), jnp.asarray(z0)))
    plan = plan_triton_call(
        generated, bound, roles, jax_triton_version=(0, 3, 1), trampoline=trampoline_for
    )
    assert list(plan.layout.multiple_of_16) == hinted
    source = plan.layout.source()
    for name in hinted:
        assert f"    {name} = {name} // 16 * 16\n" in source
    assert source.count("// 16 * 16") == len(hinted)
    (z,) = simulate_jax_triton(plan, (0, 3, 1), {})
    np.testing.assert_allclose(z, z0 + x, rtol=1e-6)


def test_plan_reads_constexpr_from_the_signature() -> None:
    """The trampoline's constexpr parameters are the signature's, not parsed from source."""
    generated, bound, roles = bind(kernel, (jnp.ones(4), jnp.ones(4), struct(4)))
    plan = plan_triton_call(
        generated,
        bound,
        roles,
        jax_triton_version=(0, 4, 0),
        trampoline=trampoline_for,
        autotune=FakeAutotune(),
        config=FakeAutotune.config,
    )
    constexpr = {name for name, is_constexpr in plan.layout.parameters if is_constexpr}
    assert constexpr == {p.name for p in generated.signature if p.constexpr}
    (meta,) = kernel.spec.meta_symbols
    assert {"ninetoothed_int64", meta} <= constexpr and "x_pointer" not in constexpr


# ---------------------------------------------------------------- the test-side helper


def jax_support() -> Any:
    """``tests/support/jax_support.JaxSupport``, the cross-package tests' JAX helper."""
    from support.jax_support import JaxSupport

    return JaxSupport()


@pytest.mark.parametrize("method", ["call", "jit_call"])
def test_jax_support_maps_outputs_to_argument_positions(method: str) -> None:
    support = jax_support()
    x, y = data(30), data(30)
    args = [support.from_numpy(x), support.from_numpy(y), support.poisoned((30,), "float32")]
    args.append(support.poisoned((30,), "float32"))
    d, s = getattr(support, method)(two_outputs, args, {}, outputs=[3, 2])
    np.testing.assert_allclose(s, x + y, rtol=1e-6)
    np.testing.assert_allclose(d, x - y, rtol=1e-6)
    (scaled,) = getattr(support, method)(
        scale, [support.from_numpy(x), 3.0, support.poisoned((30,), "float32")], {}, outputs=[2]
    )
    np.testing.assert_allclose(scaled, x * 3.0, rtol=1e-6)
    with pytest.raises(ValueError, match="not an output"):
        support.call(two_outputs, args, {}, outputs=[0])


def test_jax_support_conversions() -> None:
    support = jax_support()
    array = RNG.standard_normal((3, 4)).astype(np.float32)
    value = support.non_contiguous(array)
    assert isinstance(value, jax.Array)
    np.testing.assert_array_equal(support.to_numpy(value), array)
    bf16 = support.from_numpy(array.astype(jnp.bfloat16))
    assert bf16.dtype == jnp.bfloat16 and support.to_numpy(bf16).dtype == np.float32


def test_importing_jax_triton_keeps_tritons_cache(monkeypatch, tmp_path) -> None:
    """jax-triton 0.3.1 blanks TRITON_CACHE_DIR on import; the adapter puts it back."""
    monkeypatch.delitem(sys.modules, "jax_triton", raising=False)
    # A stand-in with jax-triton 0.3.1's import-time side effect.
    (tmp_path / "jax_triton.py").write_text("import os\nos.environ['TRITON_CACHE_DIR'] = ''\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/triton")
    module = triton_call.import_keeping_triton_cache()
    assert module.__name__ == "jax_triton"
    assert os.environ["TRITON_CACHE_DIR"] == "/somewhere/triton"
    monkeypatch.delitem(sys.modules, "jax_triton")
    monkeypatch.delenv("TRITON_CACHE_DIR")
    triton_call.import_keeping_triton_cache()
    assert "TRITON_CACHE_DIR" not in os.environ
