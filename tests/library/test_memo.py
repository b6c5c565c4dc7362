"""The ops' per-signature memo: a repeated call runs its plan, and nothing else does.

A plan replaces the op's checks and choices, so every test here makes sure a
call that differs in anything the choices read (dtype, shape, strides,
device, scalar type or value, aliasing, pinned settings) takes the full path,
with its errors, and that a planned call computes the same as the full path.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from support.library import assert_close, attention, f64, random

from ninetoothed.errors import LaunchError
from ninetoothed.library import pinned_block_sizes
from ninetoothed.library.ops import _memo, decoding
from ninetoothed.library.ops._recording import Recorder


@pytest.fixture
def described(framework: Any, ops: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The tensors the ops describe (the full path describes; a plan does not)."""
    seen: list[Any] = []
    describe = ops.framework.describe

    def counted(tensor: Any) -> Any:
        seen.append(tensor)
        return describe(tensor)

    monkeypatch.setattr(ops.framework, "describe", counted)
    _memo.forget()
    return seen


def _thrice(call: Callable[[], Any], described: list[Any]) -> list[int]:
    """How many tensors each of three calls described."""
    counts = []
    for _ in range(3):
        described.clear()
        call()
        counts.append(len(described))
    return counts


def test_the_third_call_of_a_signature_runs_its_plan(framework, ops, described):
    x, y = (framework.from_numpy(random((37,), "float16")) for _ in range(2))
    counts = _thrice(lambda: ops.add(x, y), described)
    assert counts[0] > 0 and counts[1] > 0 and counts[2] == 0
    a, b = random((37,), "float16"), random((37,), "float16")
    result = ops.add(framework.from_numpy(a), framework.from_numpy(b))  # new tensors, the plan
    assert len(described) == 0
    assert_close(framework.to_numpy(result), f64(a) + f64(b), "float16")


@pytest.mark.parametrize(
    "name, shapes, extra",
    [
        ("add", [(5, 24), (5, 24)], {}),  # a plan of stand-ins where the launch takes them
        ("add", [(5, 24), (24,)], {}),
        ("silu", [(2, 3, 40)], {}),
        ("swiglu", [(3, 40), (3, 40)], {}),
        ("mm", [(20, 24), (24, 36)], {}),
        ("rms_norm", [(6, 40), (40,)], {"eps": 1e-5}),
        ("softmax", [(6, 40)], {"dim": 0}),
    ],
)
def test_planned_calls_compute_what_the_full_path_does(
    framework, ops, described, name, shapes, extra
):
    op = getattr(ops, name)
    for round in range(4):
        arrays = [random(shape, "float32") for shape in shapes]
        result = op(*map(framework.from_numpy, arrays), **extra)
        assert (len(described) == 0) == (round >= 2)
        described.clear()
        expected = _reference(name, arrays, extra)
        assert_close(framework.to_numpy(result), expected, "float32", matrix=name == "mm")


def _reference(name: str, arrays: list[np.ndarray], extra: dict[str, Any]) -> np.ndarray:
    values = [f64(a) for a in arrays]
    if name == "add":
        return values[0] + values[1]
    if name == "silu":
        return values[0] / (1 + np.exp(-values[0]))
    if name == "swiglu":
        return values[0] * values[1] / (1 + np.exp(-values[1]))
    if name == "mm":
        return values[0] @ values[1]
    if name == "rms_norm":
        x, w = values
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + extra["eps"]) * w
    x = values[0]
    e = np.exp(x - x.max(extra["dim"], keepdims=True))
    return e / e.sum(extra["dim"], keepdims=True)


def test_decoding_attention_runs_its_plan(framework, ops, described):
    shapes = [(1, 4, 1, 16), (1, 2, 70, 16), (1, 2, 70, 16)]
    with decoding.pinned_key_splits(3):  # the two kernels of flash-decoding
        for round in range(3):
            arrays = [random(shape, "float32") for shape in shapes]
            tensors = map(framework.from_numpy, arrays)
            result = ops.scaled_dot_product_attention(*tensors, enable_gqa=True)
            assert (len(described) == 0) == (round == 2)
            described.clear()
            q, k, v = (f64(a) for a in arrays)
            k, v = (np.repeat(t, 2, axis=1) for t in (k, v))
            assert_close(
                framework.to_numpy(result), attention(q, k, v, False, 16**-0.5), "float32", True
            )


def _planned(framework: Any, ops: Any, described: list[Any], *arrays: np.ndarray) -> None:
    tensors = [framework.from_numpy(a) for a in arrays]
    assert _thrice(lambda: ops.add(*tensors), described)[2] == 0


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(lambda: random((8,), "float16"), id="dtype"),
        pytest.param(lambda: random((9,), "float32"), id="shape"),
        pytest.param(lambda: random((2, 9), "float32"), id="rank"),
    ],
)
def test_a_changed_signature_takes_the_full_path(framework, ops, described, other):
    x = random((8,), "float32")
    _planned(framework, ops, described, x, x.copy())
    described.clear()
    with pytest.raises(LaunchError, match="add"):
        ops.add(framework.from_numpy(x), framework.from_numpy(other()))
    assert described  # the full path ran, and refused


def test_changed_strides_take_the_full_path(framework, ops, described):
    x = random((6, 8), "float32")
    _planned(framework, ops, described, x, x.copy())
    described.clear()
    strided = framework.non_contiguous(x)  # same shape and dtype, other strides
    result = ops.add(framework.from_numpy(x), strided)
    if framework.name != "jax":  # JAX arrays are always row-major: nothing changed
        assert described
    assert_close(framework.to_numpy(result), 2 * f64(x), "float32")


def test_one_tensor_twice_is_another_signature(framework, ops, described):
    x, y = random((8,), "float32"), random((8,), "float32")
    _planned(framework, ops, described, x, y)
    described.clear()
    same = framework.from_numpy(y)
    result = ops.add(same, same)
    assert described
    assert_close(framework.to_numpy(result), 2 * f64(y), "float32")


def test_a_scalar_of_another_type_or_value_takes_the_full_path(framework, ops, described):
    x = framework.from_numpy(random((4, 8), "float32"))
    _thrice(lambda: ops.softmax(x, dim=1), described)
    with pytest.raises(LaunchError, match="dim must be an int"):
        ops.softmax(x, dim=True)  # True == 1, but torch refuses it: so do the ops
    described.clear()
    ops.softmax(x, dim=0)
    assert described


def test_signed_zeros_are_different_keys():
    memo = _memo.Memo(lambda framework: None, _Numpy())
    assert memo._key((0.0,), {}) != memo._key((-0.0,), {})
    assert memo._key((1,), {}) != memo._key((1.0,), {}) != memo._key((True,), {})
    assert memo._key((float("nan"),), {}) == memo._key((float("nan"),), {})
    assert memo._key((object(),), {}) is None  # no signature: the full path


def test_pinned_settings_are_part_of_the_key(framework, ops, described):
    x, y = (framework.from_numpy(random((40,), "float32")) for _ in range(2))
    with pinned_block_sizes(8):
        _thrice(lambda: ops.add(x, y), described)
    described.clear()
    ops.add(x, y)  # the fixture's pinned size of 16 again: another signature
    assert described


def test_every_setting_the_ops_read_is_in_the_key():
    """A module-level one-element list of ``ninetoothed.library.ops`` is a setting the
    ops' choices read (a pinned size or count): the memo must key on it."""
    folder = Path(inspect.getfile(_memo)).parent
    found = set()
    for path in folder.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.List):
                found.add((path.stem, node.target.id))  # type: ignore[union-attr]
    assert len(found) == len(_memo.SETTINGS) == 3, found
    modules = {m.__name__.rsplit(".", 1)[-1]: m for m in _modules()}
    for module, name in found:
        assert any(getattr(modules[module], name) is s for s in _memo.SETTINGS), name


def _modules() -> list[Any]:
    from ninetoothed.library.ops import decoding, kernels, split

    return [decoding, kernels, split]


def test_the_memo_starts_afresh_past_its_limit(framework, ops, described, monkeypatch):
    monkeypatch.setattr(_memo, "LIMIT", 2)
    arrays = [random((n,), "float32") for n in (5, 6, 7)]
    for a in arrays:
        ops.silu(framework.from_numpy(a))
    memos = [m for m in list(_memo._MEMOS) if m._framework is ops.framework]
    assert max(len(m._plans) for m in memos) <= 2


# ------------------------------------------------------------ the recorder


class _Numpy:
    """A framework hook over NumPy arrays; its kernels are Python functions."""

    name = "numpy"

    def describe(self, tensor: Any) -> Any:
        return (tensor.shape, tensor.strides, str(tensor.dtype), "cpu", 0)

    def empty(self, like: Any, shape: Any, dtype: str | None = None) -> Any:
        return np.empty(shape, dtype or like.dtype)

    def reshape(self, tensor: Any, shape: Any) -> Any:
        return tensor.reshape(shape)

    def run(self, kernel: Any, arguments: Any, outputs: Any) -> list[Any]:
        kernel(*arguments)
        return [arguments[i] for i in outputs]

    def signature(self, value: Any) -> Any:
        return (value.shape, value.dtype) if isinstance(value, np.ndarray) else None

    def other(self) -> None:
        """A part of the hook the recorder does not know."""


def _double(x: Any, out: Any) -> None:
    out[...] = 2 * x


def _doubling(framework: Any, x: Any) -> Any:
    flat = framework.reshape(x, (x.size,))
    (out,) = framework.run(_double, [flat, framework.empty(flat, flat.shape)], [1])
    return framework.reshape(out, x.shape), out


def _recorded(op: Callable[..., Any], *args: Any) -> Any:
    recorder = Recorder(_Numpy(), args, {})  # type: ignore[arg-type]
    return recorder.plan(op(recorder, *args))


def test_a_recording_repeats_on_other_tensors():
    plan = _recorded(_doubling, np.ones((2, 3)))
    assert plan is not None
    x = np.arange(6.0).reshape(2, 3)
    result, flat = plan(_Numpy(), (x,), {})
    assert (result == 2 * x).all() and result.shape == (2, 3) and flat.shape == (6,)


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(lambda f, x: f.run(_double, [x * 1, f.empty(x, x.shape)], [1])[0], id="made"),
        pytest.param(lambda f, x: x + 1, id="returned"),
        pytest.param(lambda f, x, s: f.empty(x, (int(s.sum()),)), id="read"),
        pytest.param(lambda f, x: (f.other(), f.empty(x, x.shape))[1], id="hook"),
    ],
)
def test_what_a_plan_cannot_repeat_is_never_planned(op):
    """A tensor made outside the hook, a result not made by it, a tensor read other
    than through it, a part of the hook the recorder does not know."""
    arrays = [np.ones(3) for _ in inspect.signature(op).parameters][1:]
    assert _recorded(op, *arrays) is None


def test_unplanned_signatures_keep_the_full_path():
    calls = []

    def op(framework: Any, x: Any) -> Any:
        calls.append(x)
        return x + 1  # not through the hook: never planned

    memo = _memo.Memo(op, _Numpy())  # type: ignore[arg-type]
    for _ in range(4):
        memo((np.ones(3),), {})
    assert len(calls) == 4


def test_traced_calls_take_the_full_path_and_plan_nothing():
    jax = pytest.importorskip("jax")
    from nt_jax import ops

    memo = next(
        m for m in list(_memo._MEMOS) if m._framework is ops.framework and _named(m, "swiglu")
    )
    memo._plans.clear()
    jitted = jax.jit(ops.swiglu)  # no backward: traced arguments reach the memo
    for length in (8, 8, 9):
        x, y = random((length,), "float32"), random((length,), "float32")
        expected = f64(x) * f64(y) / (1 + np.exp(-f64(y)))
        assert_close(jitted(x, y), expected, "float32")
    assert not memo._plans  # tracers have no signature
    concrete = jax.numpy.asarray(random((8,), "float32"))
    ops.swiglu(concrete, concrete)
    assert len(memo._plans) == 1  # a concrete call is remembered


def _named(memo: _memo.Memo, name: str) -> bool:
    return getattr(memo._operation, "__name__", None) == name


# ------------------------------------------------------------ the most recent hit


def _scale(x: Any, s: float, out: Any) -> None:
    out[...] = x * s


def _scaling(framework: Any, x: Any, s: float) -> Any:
    (out,) = framework.run(_scale, [x, s, framework.empty(x, x.shape)], [2])
    return out


class _Guarded(_Numpy):
    """A hook whose guards pass every tensor and count their checks: only the rest of
    the key (scalars, aliasing, settings) can tell calls apart on the most recent hit."""

    def __init__(self) -> None:
        self.checks = 0

    def signature_guard(self, tensors: Any) -> Any:
        def check(*given: Any) -> bool:
            self.checks += 1
            return True

        return check


def test_the_most_recent_hit_is_found_by_its_guard_and_the_rest_of_its_key():
    hook = _Guarded()
    memo = _memo.Memo(_scaling, hook)  # type: ignore[arg-type]
    x = np.ones(3)
    for _ in range(4):
        assert (memo((x, 2.0), {}) == 2).all()
    assert hook.checks == 1  # the fourth call: the guard, no key
    for _ in range(3):
        memo((x, 0.0), {})
    negative = memo((x, -0.0), {})  # equal to 0.0, but another key: another result
    assert np.signbit(negative).all()
    assert not np.signbit(memo((x, 0.0), {})).any()
    with pinned_block_sizes(8):  # a setting: the rest of the key differs
        described = []
        memo._operation = lambda f, *a: described.append(a) or _scaling(f, *a)
        memo((x, 0.0), {})
        assert described  # the full path, not the most recent plan


@pytest.mark.parametrize("setting", ["off", "0", "on"])
def test_the_memo_can_be_switched_off(monkeypatch, setting):
    """``NINETOOTHED_OP_MEMO=off``: every call of a memo made then runs the op in full
    (a way out should a plan misbehave); on, the third call of a signature runs its plan."""
    monkeypatch.setenv(_memo.KNOB, setting)
    calls = []

    def op(framework: Any, x: Any) -> Any:
        calls.append(x)
        return _doubling(framework, x)

    memo = _memo.Memo(op, _Numpy())  # type: ignore[arg-type]
    for _ in range(4):
        result, _flat = memo((np.arange(6.0).reshape(2, 3),), {})
        assert (result == 2 * np.arange(6.0).reshape(2, 3)).all()
    assert len(calls) == (2 if setting == "on" else 4)


def test_a_dtype_argument_is_keyed_by_value(framework, ops, described):
    """``scaled_mm``'s ``out_dtype`` given as the framework's dtype (not its name) still
    finds the call's plan: before, every such call took the op's full path."""
    native = importlib.import_module({"jax": "jax.numpy"}.get(framework.name, framework.name))
    a, b = (framework.from_numpy(random(shape, "float32").astype(ml_dtypes.float8_e4m3fn))
            for shape in ((8, 16), (16, 8)))  # fmt: skip
    scale = framework.from_numpy(np.ones((1,), np.float32))
    for name in ("bfloat16", "float16"):  # each its own key, and its own output type
        dtype = getattr(native, name)

        def call(dtype: Any = dtype) -> Any:
            return ops.scaled_mm(a, b, scale, scale, out_dtype=dtype)

        counts = _thrice(call, described)
        assert counts[0] > 0 and counts[2] == 0, (name, counts)
        assert call().dtype == dtype
