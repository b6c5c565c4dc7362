"""The Python callable of a C library, on torch tensors, against the stand-in driver.

CPU tensors are described as on ``cuda:0`` (the launch never touches their
memory: the stand-in driver records it), so the whole Python path runs: the
just-in-time argument checks, the C arguments, the stream, the fast path of
repeated calls, and the library's own refusals raised with its message.
"""

from __future__ import annotations

import ctypes
import dataclasses

import pytest
import torch

from ninetoothed._aot.kernel import _scalar
from ninetoothed.aot import CParameter
from ninetoothed.errors import LaunchError

pytestmark = pytest.mark.interpreter_only


def _parameters(fake, count):
    return fake.parameters([".u64"] * 3 + [".u32"] * (count - 3))


def test_calls_pass_the_tensors_and_the_stream(built, fake_cuda, on_gpu):
    add = built["add"].aot
    add._fast = None
    x, y, z = (torch.empty(4096, dtype=torch.float16) for _ in range(3))
    launches = fake_cuda.get("fake_launches")
    add(x, y, z)
    assert fake_cuda.launch()["stream"] == on_gpu and fake_cuda.launch()["grid"] == (16, 1, 1)
    assert _parameters(fake_cuda, 6)[:6] == [
        x.data_ptr(),
        y.data_ptr(),
        z.data_ptr(),
        4096,
        4096,
        4096,
    ]
    assert add._fast is not None and len(add._fast.plans) == 1
    a, b, c = (torch.empty(4096, dtype=torch.float16) for _ in range(3))
    add(a, b, c)  # the fast path: new pointers into the remembered arguments
    assert _parameters(fake_cuda, 6)[:3] == [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    odd = torch.empty(8192, dtype=torch.float16)[::2]
    add(odd, b[:4096], c)  # a new stride: the full path, then remembered
    assert len(add._fast.plans) == 2
    assert fake_cuda.get("fake_launches") == launches + 3
    with pytest.raises(LaunchError, match=r"parameter 'y' expects dtype float16, got float32"):
        add(a, b.float(), c)  # refused by the same checks as a just-in-time call
    with pytest.raises(
        LaunchError, match=r"kernel 'add' \(\w+\.py:\d+\) takes 3 .* got 2; missing parameter"
    ):
        add(a, b)


def test_the_library_s_refusals_raise_its_message(built, fake_cuda, on_gpu):
    add = built["add"].aot
    x = torch.empty(300, dtype=torch.float16)
    overlapping = torch.empty(1, dtype=torch.float16).expand(300)
    for _ in range(2):  # the full path, then (remembered shapes) the fast one
        with pytest.raises(
            LaunchError,
            match=r"the output 'z' \(shape \(300,\), strides \(0,\)\) has stride 0 "
            r".*NINETOOTHED_ERROR_SHAPE",
        ):
            add(x, x, overlapping)


def test_scalars_as_numbers_or_zero_dimensional_tensors(built, fake_cuda, on_gpu):
    scale = built["scale"].aot
    x, y = torch.empty(100, dtype=torch.float32), torch.empty(100, dtype=torch.float32)
    types = [".u64", ".u64", ".u32", ".u32", ".f32"]
    for alpha, flag in ((2.5, 1), (-0.25, torch.tensor(True)), (torch.tensor(3.0), None), (7, 1)):
        scale(x, alpha, flag, y)
        expected = float(alpha)
        assert fake_cuda.parameters(types)[-1] == pytest.approx(expected)
    with pytest.raises(LaunchError, match=r"'flag' is fixed at make time to 1"):
        scale(x, 2.0, 0, y)  # not a remembered call: a fixed value is part of the key


def test_a_thread_without_a_current_context_gets_its_device_s(built, fake_cuda, on_gpu):
    """The framework made no context current on a new thread: the library's
    ninetoothed_use_device makes the device's primary context current, and the call
    goes on."""
    import threading

    add = built["add"].aot
    x = torch.empty(512, dtype=torch.float16)
    errors = []

    def call():
        try:
            add(x, x, x)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    fake_cuda.set("fake_no_context", 1)
    try:
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
    finally:
        fake_cuda.set("fake_no_context", 0)
    assert not errors, errors
    assert fake_cuda.launch()["grid"] == (2, 1, 1)


def test_immutable_arrays_are_refused(built):
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.ones(8, dtype=jnp.float16)
    with pytest.raises(
        LaunchError, match=r"kernel 'add' \(\w+\.py:\d+\): a C library writes into .* jax's"
    ):
        built["add"].aot(x, x, x)


def test_a_scalar_its_c_type_cannot_hold_is_refused():
    parameter = CParameter("n", "scalar", ctype="int32_t", dtype="int32")

    class Spec:
        label = "kernel 'kernel' (kernel.py:1)"

    assert _scalar(Spec(), parameter, 5).value == 5
    with pytest.raises(
        LaunchError, match=r"'n' is a int32_t \(int32\) .* cannot hold 1099511627776"
    ):
        _scalar(Spec(), parameter, 2**40)
    with pytest.raises(LaunchError, match=r"cannot hold 2.5"):
        _scalar(Spec(), parameter, 2.5)
    assert isinstance(_scalar(Spec(), CParameter("a", "scalar", "double"), 2), ctypes.c_double)


@pytest.fixture
def paddle_on_gpu(monkeypatch):
    """Paddle tensors described as on cuda:0, Paddle's current stream STREAM (a stand-in
    for a GPU: the launch never touches their memory)."""
    paddle = pytest.importorskip("paddle")
    from nt_paddle.adapter import PaddleAdapter

    describe = PaddleAdapter.describe
    monkeypatch.setattr(
        PaddleAdapter, "describe", lambda self, obj: describe(self, obj)._replace(device="cuda:0")
    )
    monkeypatch.setattr(PaddleAdapter, "launch_stream", lambda self, device: 0xFACE)
    # Without fast reads: the callable asks the adapter's plain methods on every call.
    monkeypatch.setattr(PaddleAdapter, "host_reads", lambda self: None)
    monkeypatch.setattr(PaddleAdapter, "device_guard", lambda self, device: None)
    return paddle


def test_calls_on_paddle_tensors_pass_their_pointers_and_stream(built, fake_cuda, paddle_on_gpu):
    paddle = paddle_on_gpu
    add = built["add"].aot
    add._fast = None
    x, y, z = (paddle.zeros([4096], dtype="float16") for _ in range(3))
    for _ in range(2):  # the full path, then the fast one
        add(x, y, z)
        assert fake_cuda.launch()["stream"] == 0xFACE and fake_cuda.launch()["grid"] == (16, 1, 1)
        assert _parameters(fake_cuda, 6)[:3] == [x.data_ptr(), y.data_ptr(), z.data_ptr()]
    assert len(add._fast.plans) == 1
    with pytest.raises(LaunchError, match=r"parameter 'y' expects dtype float16, got float32"):
        add(x, y.astype("float32"), z)
    with pytest.raises(LaunchError, match=r"'x' \(read; .* share memory"):
        add(x[:4000], y[:4000], x[1:4001])  # views of one buffer: refused by the library


def test_paddle_cpu_tensors_are_refused_clearly(built):
    paddle = pytest.importorskip("paddle")
    x = paddle.zeros([8], dtype="float16")
    with pytest.raises(
        LaunchError,
        match=r"kernel 'add' \(aot_kernels\.py:\d+\): the tensors are on cpu, .*tensor\.cuda\(\)",
    ):
        built["add"].aot(x, x, x)


def test_repeated_calls_confirm_the_latest_facts_and_launch_their_own_pointers(
    built, fake_cuda, on_gpu
):
    """The latest call's facts are confirmed by the framework's guard, others found by
    key; a plan another thread is launching (its lock held) sends the call down the full
    path, which launches the call's own pointers and leaves that plan's arguments alone."""
    add = built["add"].aot
    add._fast = None
    assert add._entry.packed is not None  # one pointer through ctypes
    short = [torch.empty(4096, dtype=torch.float16) for _ in range(3)]
    long = [torch.empty(8192, dtype=torch.float16) for _ in range(3)]
    for tensors in (short, long, short, long, short):
        tensors = [torch.empty_like(t) for t in tensors]  # new pointers every call
        add(*tensors)
        expected = [t.data_ptr() for t in tensors] + [t.numel() for t in tensors]
        assert _parameters(fake_cuda, 6)[:6] == expected
        assert fake_cuda.launch()["grid"] == (tensors[0].numel() // 256, 1, 1)
    fast = add._fast
    assert len(fast.plans) == 2 and fast.mru[0].slots[0].data == tensors[0].data_ptr()
    plan = fast.mru[0]
    held = [slot.data for slot in plan.slots]
    fresh = [torch.empty(4096, dtype=torch.float16) for _ in range(3)]
    with plan.lock:
        add(*fresh)
    assert _parameters(fake_cuda, 3) == [t.data_ptr() for t in fresh]
    assert [slot.data for slot in plan.slots] == held


def test_a_library_without_the_packed_entry_is_called_by_value(built, fake_cuda, on_gpu):
    scale = built["scale"].aot
    entry = scale._entry
    scale._fast = None
    scale._entry = dataclasses.replace(entry, packed=None)
    try:
        x, y = torch.empty(100, dtype=torch.float32), torch.empty(100, dtype=torch.float32)
        for alpha in (2.5, -1.0):  # the full path, then the fast one
            x, y = torch.empty_like(x), torch.empty_like(y)
            scale(x, alpha, 1, y)
            recorded = fake_cuda.parameters([".u64", ".u64", ".u32", ".u32", ".f32"])
            assert recorded[:2] == [x.data_ptr(), y.data_ptr()]
            assert recorded[-1] == pytest.approx(alpha)
    finally:
        scale._entry = entry
        scale._fast = None
