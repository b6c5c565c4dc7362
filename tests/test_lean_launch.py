"""The lean launcher against a stand-in CUDA driver that records each launch.

Kernels are compiled for sm_90 (no GPU needed); their PTX lists the
parameters the compiled function takes, and the stand-in driver
(``support/aot_fakecuda.c``) records what ``cuLaunchKernel`` received: grid,
block, shared memory, stream, function and every parameter's 8 bytes.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support import lean_kernels
from support.aot import FakeCuda, build_fake_cuda
from support.base import ON_GPU

from nt_triton._launch import lean
from nt_triton._launch.layout import TensorMap

pytestmark = pytest.mark.skipif(ON_GPU, reason="the stand-in driver replaces the GPU's")

FUNCTION = 0xF00D
STREAM = 0x5700


@pytest.fixture(scope="module")
def fake_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in libcuda, built here with the system compiler."""
    return build_fake_cuda(tmp_path_factory.mktemp("fakecuda"))


@pytest.fixture(scope="module")
def fake(fake_path: Path) -> Iterator[FakeCuda]:
    """The stand-in libcuda, loaded by the extension (built here with the system compiler)."""
    module = lean.build()
    module.load(str(fake_path))
    saved = list(lean.extension.values)
    lean.extension.values[:] = [module]
    yield FakeCuda(fake_path)
    lean.extension.values[:] = saved


@pytest.fixture(autouse=True)
def clean(fake: FakeCuda) -> None:
    fake.set("fake_fail_launch", 0)
    fake.set("fake_no_context", 0)


@pytest.fixture(scope="module")
def sm90() -> dict[str, dict[str, Any]]:
    """``support.lean_kernels``' kernels compiled for sm_90, described (in a process of
    its own: Triton compiles only where no interpreter has patched its language)."""
    environment = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, lean_kernels.__file__], env=environment, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    described: dict[str, dict[str, Any]] = json.loads(result.stdout)
    return described


def loaded(described: dict[str, Any]) -> Any:
    """What ``make_launch`` reads of a loaded kernel, with a stand-in function handle."""
    return SimpleNamespace(
        src=SimpleNamespace(signature=dict(enumerate(described["signature"]))),
        metadata=SimpleNamespace(
            name=described["name"], num_warps=described["num_warps"], shared=described["shared"]
        ),
        function=FUNCTION,
    )


def recorded(fake: FakeCuda, count: int) -> list[bytes]:
    return [struct.pack("<Q", value) for value in fake.record[8 : 8 + count]]


def q(value: int) -> bytes:
    return struct.pack("<Q", value)


def f32(value: float) -> bytes:
    return struct.pack("<f", value) + bytes(4)


def test_scalars_pointers_and_compiled_in_values(fake: FakeCuda, sm90: dict[str, Any]) -> None:
    # a, n, shift, big, b, factor, one (specialised to 1: compiled in), BLOCK
    binary = sm90["scalars"]
    # Per call: the two pointers, then shift, big, factor and one; n and BLOCK bound.
    order = ("p0", "a0", "p2", "p3", "p1", "p4", "p5", "a1")
    launch = lean.make_launch(loaded(binary), order, (5, 1, 1), [100, 128])
    before = fake.get("fake_launches")
    launch(STREAM, 0x7000, 0x9000, -7, 2**40 + 3, 2.5, 1)
    assert fake.get("fake_launches") == before + 1
    launched = fake.launch()
    assert launched["grid"] == (5, 1, 1)
    assert launched["threads"] == 32 * 4
    assert launched["shared"] == binary["shared"]
    assert launched["stream"] == STREAM
    assert launched["module"] == FUNCTION
    types = binary["ptx"]
    assert types == ["u64", "u32", "u32", "u64", "u64", "f32", "u64", "u64"]
    assert fake.get("fake_parameters") == len(types)
    assert recorded(fake, len(types)) == [
        q(0x7000),
        q(100),
        q(2**32 - 7),
        q(2**40 + 3),
        q(0x9000),
        f32(2.5),
        q(0),
        q(0),
    ]


def test_two_dimensional_grid_bound_strides_and_a_bool(
    fake: FakeCuda, sm90: dict[str, Any]
) -> None:
    # src, rows, cols, stride_src, dst, stride_dst, negate, BR, BC
    binary = sm90["copy2d"]
    order = ("p0", "a0", "a1", "a2", "p1", "p2", "p3", "a3", "a4")
    launch = lean.make_launch(loaded(binary), order, (3, 3, 2), [33, 70, 80, 16, 32])
    launch(0, 0x1000, 0x2004, 96, True)
    assert fake.launch()["grid"] == (3, 3, 2)
    assert fake.launch()["shared"] == binary["shared"] > 0
    types = binary["ptx"]
    assert types == ["u64", "u32", "u32", "u32", "u64", "u32", "u8", "u64", "u64"]
    assert recorded(fake, len(types)) == [
        q(0x1000),
        q(33),
        q(70),
        q(80),
        q(0x2004),
        q(96),
        q(1),
        q(0),
        q(0),
    ]
    launch(0, 0x1000, 0x2004, 4, False)  # another call: the previous values do not stay
    assert recorded(fake, len(types))[5:7] == [q(4), q(0)]


def launch_of(**changes: Any) -> Any:
    arguments: dict[str, Any] = {
        "name": "kernel_x", "function": FUNCTION, "grid": (1, 1, 1), "block": 128, "shared": 0,
        "constants": bytes(16), "slots": ((0, 0, "i"), (1, 1, "e")), "arity": 2,
    }  # fmt: skip
    arguments.update(changes)
    return lean.extension().Launch(**arguments)


def test_fp16_and_fp64_values(fake: FakeCuda) -> None:
    launch_of()(0, 3, 0.1)
    assert recorded(fake, 2) == [q(3), struct.pack("<e", 0.1) + bytes(6)]
    launch_of(slots=((1, 0, "d"), (0, 1, "E")))(0, 0.1, 1.0)
    assert recorded(fake, 2) == [q(0x3F80), struct.pack("<d", 0.1)]


def test_a_failed_launch_raises_naming_the_kernel(fake: FakeCuda) -> None:
    fake.set("fake_fail_launch", 700)
    before = fake.get("fake_launches")
    with pytest.raises(
        RuntimeError, match=r"kernel_x: cuLaunchKernel failed with CUDA error 700 \(CUDA_ERROR_FAKE"
    ):
        launch_of()(0, 1, 1.0)
    assert fake.get("fake_launches") == before


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        (
            (2**31, 1.0),
            OverflowError,
            r"kernel_x: per-call value 0 \(2147483648\) cannot be passed as i32",
        ),
        (("1", 1.0), TypeError, r"kernel_x: per-call value 0 \('1'\) cannot be passed as i32"),
        ((1, "x"), TypeError, r"kernel_x: per-call value 1 \('x'\) cannot be passed as fp16"),
        ((1,), TypeError, r"kernel_x: a launch takes the stream and 2 per-call values"),
    ],
)
def test_bad_values_raise_before_launching(
    fake: FakeCuda, values: tuple[Any, ...], error: type, message: str
) -> None:
    before = fake.get("fake_launches")
    with pytest.raises(error, match=message):
        launch_of()(0, *values)
    assert fake.get("fake_launches") == before


def test_without_a_current_context_it_makes_device_0s_primary_one_current(fake: FakeCuda) -> None:
    fake.set("fake_no_context", 1)
    get_current = fake.library.cuCtxGetCurrent
    context = ctypes.c_void_p()
    try:
        launch_of()(0, 1, 1.0)
        get_current(ctypes.byref(context))
        assert context.value == 0x2000  # the stand-in's primary context of device 0
    finally:
        fake.library.cuCtxSetCurrent(ctypes.c_void_p(0))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"grid": (0, 1, 1)}, "grid x must be in 1"),
        ({"grid": (1, 1)}, r"grid must be a tuple \(x, y, z\)"),
        ({"constants": bytes(12)}, "8 bytes per parameter"),
        ({"constants": bytes(8 * 4097)}, "at most 4096 parameters"),
        ({"slots": ((2, 0, "i"),)}, "out of range"),
        ({"slots": ((0, 0, "z"),)}, "of no type"),
        ({"slots": ((0, 2, "i"),)}, "out of range"),
    ],
)
def test_a_launch_is_made_only_of_a_consistent_layout(
    fake: FakeCuda, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        launch_of(**changes)


def test_a_grid_past_the_drivers_range_takes_tritons_launcher(
    fake: FakeCuda, sm90: dict[str, Any]
) -> None:
    binary = sm90["copy2d"]
    order = ("p0", "a0", "a1", "a2", "p1", "p2", "p3", "a3", "a4")
    bound = [33, 70, 80, 16, 32]
    assert lean.make_launch(loaded(binary), order, (2**32, 1, 1), bound) is None
    assert lean.make_launch(loaded(binary), order, (2**32 - 1, 1, 1), bound) is not None


def map_launch(**changes: Any) -> Any:
    """A launch of ``(desc, out, n)``: a 2-D bfloat16 descriptor per call, then a pointer,
    with ``n`` bound (the layout of ``nt_triton._launch.layout``, the stand-in's kernel)."""
    described = TensorMap(
        data_type=9, swizzle=3, fill=0, element_size=2, shape=(300, 520), strides=(520, 1),
        block=(128, 64),
    )  # fmt: skip
    kernel = SimpleNamespace(
        src=SimpleNamespace(signature={0: "tensordesc<bf16[128, 64]>", 1: "*fp32", 2: "i32"}),
        metadata=SimpleNamespace(name="mapped", num_warps=4, shared=0),
        function=FUNCTION,
    )
    return lean.make_launch(kernel, ("p0", "p1", "a0"), (2, 1, 1), [77], (described,), **changes)


def map_arguments(fake: FakeCuda) -> list[int]:
    return list((ctypes.c_uint64 * 26).in_dll(fake.library, "fake_map_arguments"))


def test_a_tensor_map_is_encoded_from_its_address_and_passed_by_value(fake: FakeCuda) -> None:
    launch = map_launch()
    encodes = fake.get("fake_encodes")
    launch(STREAM, 0x10000, 0x9000)
    assert fake.get("fake_encodes") == encodes + 1
    arguments = map_arguments(fake)
    assert arguments[:3] == [9, 2, 0x10000]  # BFLOAT16, rank 2, the address
    assert arguments[3:5] == [520, 300] and arguments[8] == 1040 and arguments[12:14] == [64, 128]
    assert arguments[17:19] == [1, 1]  # element strides
    assert arguments[22:] == [0, 3, 2, 0]  # no interleave, 128-byte swizzle, L2 128B, no fill
    # The map (its first 8 bytes: the stand-in writes the address there), its sizes and
    # strides, the pointer, the bound i32, the scratch pointers.
    assert fake.get("fake_parameters") == 9
    assert recorded(fake, 9) == [
        q(0x10000), q(300), q(520), q(520), q(1), q(0x9000), q(77), q(0), q(0),
    ]  # fmt: skip


def test_a_map_is_encoded_again_only_for_another_address(fake: FakeCuda) -> None:
    launch = map_launch()
    launch(STREAM, 0x10000, 0x9000)
    encodes = fake.get("fake_encodes")
    launch(STREAM, 0x10000, 0xA000)
    assert fake.get("fake_encodes") == encodes
    launch(STREAM, 0x20000, 0xA000)
    assert fake.get("fake_encodes") == encodes + 1
    assert recorded(fake, 1) == [q(0x20000)]


def test_a_failed_encoding_raises_naming_the_kernel_and_caches_nothing(fake: FakeCuda) -> None:
    launch = map_launch()
    launches = fake.get("fake_launches")
    fake.set("fake_fail_encode", 1)
    try:
        with pytest.raises(RuntimeError, match=r"mapped: cuTensorMapEncodeTiled failed"):
            launch(STREAM, 0x30000, 0x9000)
    finally:
        fake.set("fake_fail_encode", 0)
    assert fake.get("fake_launches") == launches
    encodes = fake.get("fake_encodes")
    launch(STREAM, 0x30000, 0x9000)  # the same address: encoded now
    assert fake.get("fake_encodes") == encodes + 1
    with pytest.raises(TypeError, match=r"mapped: per-call value 0 \('x'\) is no tensor map"):
        launch(STREAM, "x", 0x9000)


@pytest.mark.parametrize(
    ("maps", "message"),
    [
        ([(0, 0, 9, 3, 0, (520, 300), (), (64, 128))], "inconsistent rank"),
        ([(0, 0, 9, 3, 0, (520, 300), (1040,), (64,))], "inconsistent rank"),
        ([(0, 2, 9, 3, 0, (520, 300), (1040,), (64, 128))], "out of range"),
        ([(0, 0, 9, 3, 0, (1,) * 6, (1,) * 5, (1,) * 6)], "more than 5"),
        ([(0, 0, 9, 3, 0, (520, 300), (1040,), (64, 128))] * 17, "more than 16"),
    ],
)
def test_a_launch_is_made_only_of_consistent_maps(
    fake: FakeCuda, maps: list[Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        launch_of(maps=maps)


@pytest.fixture(scope="module")
def gluon_sm90() -> dict[str, Any]:
    """``nt_triton.hopper_scaled_mm``'s kernel compiled for sm_90, described (as ``sm90``)."""
    from nt_triton import _gluon_hopper

    if not _gluon_hopper.available():
        pytest.skip("no Gluon for Hopper")
    environment = {**os.environ, "TRITON_INTERPRET": "0"}
    result = subprocess.run(
        [sys.executable, lean_kernels.__file__, "gluon"], env=environment, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    described: dict[str, Any] = json.loads(result.stdout)
    return described


def test_a_bound_gluon_launch_passes_each_tensor_where_the_kernel_takes_it(
    fake: FakeCuda, gluon_sm90: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hopper_scaled_mm.bind`` through the lean launcher: the three maps of the
    right tensors, their sizes and strides, the scales and sizes, in the compiled
    function's parameters (its PTX), and the maps' encodings as the driver takes them."""
    torch = pytest.importorskip("torch")
    from nt_triton import _gluon_hopper, hopper_scaled_mm
    from nt_triton._compile_aside import Aside
    from nt_triton._launch import compiled as loading

    described = gluon_sm90
    kernel = SimpleNamespace(
        src=SimpleNamespace(signature=dict(enumerate(described["signature"]))),
        metadata=SimpleNamespace(
            name=described["name"],
            num_warps=described["num_warps"],
            num_ctas=1,
            shared=described["shared"],
            tensordesc_meta=described["meta"],
        ),  # fmt: skip
        function=FUNCTION,
        run=SimpleNamespace(launch_cooperative_grid=False, launch_pdl=False),
    )
    aside = Aside("stand-in")
    monkeypatch.setattr(aside, "compiled", lambda key: kernel)
    monkeypatch.setattr(hopper_scaled_mm, "_ASIDE", aside)
    monkeypatch.setattr(loading, "launcher_style", lambda compiled: "3.6")
    monkeypatch.setattr(_gluon_hopper, "streams", lambda: lambda device: STREAM)
    m, n, k = 300, 264, 528
    a = torch.empty(m, k, dtype=torch.float8_e4m3fn)
    b = torch.empty(n, k, dtype=torch.float8_e4m3fn).t()
    sa, sb = torch.empty(()), torch.empty(())
    out = torch.empty(m, n, dtype=torch.bfloat16)
    bound = hopper_scaled_mm.bind(a, b, sa, sb, out, processors=7)
    assert bound is not None
    bound(a, b, sa, sb, out)
    launched = fake.launch()
    assert launched["grid"] == (min(7, 3 * 3), 1, 1)
    assert launched["threads"] == 32 * described["num_warps"]
    kinds = described["ptx"]
    assert fake.get("fake_parameters") == len(kinds)
    expected = [
        (a.data_ptr(), "map"), (m, "u32"), (k, "u32"), (k, "u64"), (1, "u64"),
        (b.data_ptr(), "map"), (n, "u32"), (k, "u32"), (k, "u64"), (1, "u64"),
        (out.data_ptr(), "map"), (m, "u32"), (n, "u32"), (n, "u64"), (1, "u64"),
        (sa.data_ptr(), "u64"), (sb.data_ptr(), "u64"), (m, "u32"), (n, "u32"), (k, "u32"),
        (0, "u64"), (0, "u64"),
    ]  # fmt: skip
    assert list(zip(fake.record[8 : 8 + len(kinds)], kinds)) == expected
    # The last map encoded, the output's: CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 (9), its
    # sizes and row stride innermost first, the kernel's box (halves of a tile), the
    # 128-byte swizzle (3), L2 promotion of 128 bytes (2), no fill.
    arguments = map_arguments(fake)
    assert arguments[:5] == [9, 2, out.data_ptr(), n, m] and arguments[8] == 2 * n
    assert arguments[12:14] == [64, 128] and arguments[22:] == [0, 3, 2, 0]


def kernel_like(**changes: Any) -> Any:
    """What ``usable`` reads of a loaded kernel."""
    metadata = {"num_ctas": 1, "tensordesc_meta": None, **changes.pop("metadata", {})}
    launcher = {"launch_cooperative_grid": False, "launch_pdl": False, **changes}
    return SimpleNamespace(
        metadata=SimpleNamespace(**metadata), run=SimpleNamespace(**launcher), src=object()
    )


def test_it_is_used_only_where_it_passes_what_tritons_launcher_passes(
    fake: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lean.usable(kernel_like(), "3.6")
    assert not lean.usable(kernel_like(), "3.9")
    assert not lean.usable(kernel_like(), "run")  # scratch memory, another Triton
    assert not lean.usable(kernel_like(metadata={"num_ctas": 2}), "3.6")
    assert not lean.usable(kernel_like(metadata={"tensordesc_meta": [{}]}), "3.6")
    # Descriptors where the caller describes them, each lowered to a tiled map of whole
    # elements.
    assert lean.usable(kernel_like(metadata={"tensordesc_meta": [{}]}), "3.6", descriptors=True)
    for meta in (None, {"fp4_padded": True}, {"is_im2col": True}):
        kernel = kernel_like(metadata={"tensordesc_meta": [{}, meta]})
        assert not lean.usable(kernel, "3.6", descriptors=True)
    assert not lean.usable(kernel_like(launch_cooperative_grid=True), "3.6")
    assert not lean.usable(kernel_like(launch_pdl=True), "3.6")
    monkeypatch.setattr(lean, "hooks_registered", lambda: True)
    assert not lean.usable(kernel_like(), "3.6")


def fresh_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget this process's build decision: the next ``lean._load()`` builds anew."""
    monkeypatch.setattr(lean.built, "values", [])


def test_the_knob_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NINETOOTHED_C_LAUNCHER", "off")
    fresh_build(monkeypatch)
    assert lean._load() is None


def test_it_builds_and_loads_the_driver_named(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("NINETOOTHED_C_LAUNCHER", raising=False)
    monkeypatch.setenv("NINETOOTHED_LIBCUDA", str(fake_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # built afresh
    fresh_build(monkeypatch)
    assert lean._load() is not None
    monkeypatch.setenv("NINETOOTHED_LIBCUDA", str(tmp_path / "no-libcuda.so"))
    assert lean._load() is None  # no driver: Triton's launcher


def test_a_failed_build_falls_back_quietly(
    fake_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import triton

    def failing(*args: Any) -> str:
        raise subprocess.CalledProcessError(1, ["cc"])

    monkeypatch.delenv("NINETOOTHED_C_LAUNCHER", raising=False)
    monkeypatch.setenv("NINETOOTHED_LIBCUDA", str(fake_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(triton.knobs.build, "impl", failing)  # Triton's build hook
    fresh_build(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="nt_triton._launch.lean"):
        assert lean._load() is None
    assert "lean launcher unavailable" in caplog.text


def test_the_extension_and_its_build_are_decided_once_each(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.delenv("NINETOOTHED_C_LAUNCHER", raising=False)
    monkeypatch.setenv("NINETOOTHED_LIBCUDA", str(fake_path))
    monkeypatch.setattr(lean.extension, "values", [])
    monkeypatch.setattr(lean.built, "values", [])
    # In a thread with a limit: a lock taken twice would hang the test, not fail it.
    deciding = threading.Thread(target=lean.extension, daemon=True)
    deciding.start()
    deciding.join(timeout=120)
    assert not deciding.is_alive(), "lean.extension() did not return"
    module = lean.extension()
    assert module is not None and lean.built() is module


def test_the_extension_takes_the_module_built_first(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``built()`` first (a pinned launch made before any kernel loads), then
    ``extension()``: one build, one module."""
    builds: list[Any] = []
    build = lean.build

    def counted() -> Any:
        builds.append(build())
        return builds[-1]

    monkeypatch.delenv("NINETOOTHED_C_LAUNCHER", raising=False)
    monkeypatch.setenv("NINETOOTHED_LIBCUDA", str(fake_path))
    monkeypatch.setattr(lean, "build", counted)
    monkeypatch.setattr(lean.extension, "values", [])
    fresh_build(monkeypatch)
    module = lean.built()
    assert module is not None and lean.extension() is module
    assert len(builds) == 1
