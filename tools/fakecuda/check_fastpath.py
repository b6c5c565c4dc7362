"""Run NineToothed's fast path through Triton's real launcher, against a stand-in libcuda.

    python tools/fakecuda/check_fastpath.py [--time]

No GPU needed (gcc and Python's headers are, as for ``check_launch.py``).
Re-runs itself with the stand-in ``libcuda.so.1`` (``fakecuda.c``) and, with
Triton's real ``CudaUtils``/``CudaLauncher`` behind a stand-in driver, calls
kernels made with ``ninetoothed.make`` on CPU torch tensors through
:class:`nt_triton._launch.FastLauncher` (stand-ins say the tensors are on
device 0 and give a fixed stream):

1. the add kernel three ways (block size auto-tuned — real tuning: worker
   processes compile the space for sm_90, a stand-in timer —, constexpr given
   at call time, pinned configuration), a kernel with a float scalar, and a
   matmul; the stand-in ``cuLaunchKernelEx`` records grid, block, stream and
   every parameter, which must be what the kernel expects, on the miss and on
   the hot path (a second call), and again after a new shape; a kernel whose
   constexpr switches a parameter off, given a meta placeholder for it;
2. ``--time``: host µs per call of the hot path, of ``JITFunction.run`` and of
   the raw launcher with everything precomputed, with a driver that does
   nothing.

Exit status 1 when a launch does not carry what the kernel expects.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MARK = "NINETOOTHED_FAKECUDA"
STREAM = 0xABC
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # support.tutorial: the example kernels


def reexec() -> None:
    from check_launch import build

    directory = str(build())
    environment = dict(os.environ)
    environment.pop("TRITON_INTERPRET", None)
    environment[MARK] = directory
    environment["TRITON_LIBCUDA_PATH"] = directory
    environment["LD_LIBRARY_PATH"] = os.pathsep.join(
        [directory, *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
    )
    environment.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    environment.setdefault("NINETOOTHED_CACHE_DIR", tempfile.mkdtemp(prefix="nt-fakecuda-"))
    environment.setdefault("NINETOOTHED_MAX_NUM_CONFIGS", "3")
    environment.setdefault("NINETOOTHED_COMPILE_WORKERS", "2")
    os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:]], environment)


def reads() -> Any:
    from ninetoothed.runtime.hookspecs import HostReads
    from nt_torch import fastpath

    return HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=("{}.shape", "{}.stride()", "{}.dtype", "{}.get_device()"),
        device_of=lambda tensor: 0,
        raw_stream=lambda index: STREAM,
        current_device=None,
        device_guard=lambda index: contextlib.nullcontext(),
        guard=fastpath.guard_factory(),
        timer=lambda run, count: [float(run() or 1.0) for _ in range(count)],
        snapshot=fastpath.snapshot,
    )


def scale_application(s: Any, t: Any, f: Any) -> None:
    t = s * f  # noqa: F841


class Recorder:
    def __init__(self) -> None:
        fake = ctypes.CDLL(str(Path(os.environ[MARK]) / "libcuda.so.1"))
        self.fake = fake
        self.record = (ctypes.c_uint64 * 32).in_dll(fake, "fake_record")
        self.launches = ctypes.c_int.in_dll(fake, "fake_launches")

    def params(self, count: int, i32: set[int]) -> list[int]:
        values = list(self.record[8 : 8 + count])
        return [v & 0xFFFFFFFF if i in i32 else v for i, v in enumerate(values)]


def launcher_of(kernel: Any, adapter: Any) -> Any:
    """The fast launcher of a ninetoothed kernel, its misses validated by the torch adapter."""
    generated = kernel.generated
    holder: dict[str, Any] = {}

    def miss(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        bound = adapter.bind(generated, args, kwargs)
        holder["launcher"].launch_bound(bound, args, kwargs)

    holder["launcher"] = generated.fast_launcher(reads(), miss)
    return holder["launcher"]


def check(
    recorder: Recorder,
    label: str,
    call: Callable[[], Any],
    grid: int,
    expected: list[int],
    i32: set[int],
) -> bool:
    recorder.fake.fake_set_nparams(len(expected))
    ok = True
    for attempt in ("miss", "hit"):
        before = recorder.launches.value
        call()
        head = list(recorder.record[:7])
        params = recorder.params(len(expected), i32)
        good = recorder.launches.value == before + 1 and head[:3] == [grid, 1, 1]
        good = good and head[5] == STREAM and params == expected
        ok = ok and good
        detail = (
            ""
            if good
            else f" grid={head[:3]} stream={head[5]:#x} params={params} expected={expected}"
        )
        print(f"  {'ok' if good else 'WRONG'}  {label} ({attempt}){detail}")
    return ok


def main() -> int:
    import torch
    from check_launch import set_stand_in_driver
    from support.tutorial import add, matmul

    import ninetoothed
    from ninetoothed import Symbol, Tensor
    from nt_torch.adapter import TorchAdapter

    set_stand_in_driver(STREAM)
    recorder = Recorder()
    adapter = TorchAdapter()
    failures = 0
    n = 4096
    x, y, z = (torch.zeros(n, dtype=torch.float16) for _ in range(3))
    pointers = [t.data_ptr() for t in (x, y, z)]
    # Unit strides are constexprs (== 1): the launcher drops them; two scratch pointers follow.
    add_params = [*pointers, n, n, n, 0, 0]
    i32 = {3, 4, 5}

    tuned = launcher_of(add.kernel, adapter)
    began = time.perf_counter()
    tuned.call(x, y, z)
    chosen = add.kernel.generated.tuner.last
    print(f"  tuned the add kernel in {time.perf_counter() - began:.1f} s: {chosen}")
    block = chosen.values[next(iter(chosen.values))]
    failures += not check(
        recorder, "add, tuned", lambda: tuned.call(x, y, z), n // block, add_params, i32
    )

    constexpr = ninetoothed.make(
        lambda a, b, c, B=Symbol("B", constexpr=True): (a.tile((B,)), b.tile((B,)), c.tile((B,))),  # noqa: B008
        add.application,
        (Tensor(1), Tensor(1), Tensor(1)),
    )
    given = launcher_of(constexpr, adapter)
    failures += not check(
        recorder, "add, constexpr B=512", lambda: given.call(x, y, z, B=512), 8, add_params, i32
    )

    pinned = ninetoothed.make(
        add.arrangement, add.application, (Tensor(1), Tensor(1), Tensor(1)),
        configs=[{"BLOCK_SIZE": 256, "num_warps": 2}],
    )  # fmt: skip
    fixed = launcher_of(pinned, adapter)
    failures += not check(
        recorder, "add, pinned 256", lambda: fixed.call(x, y, z), 16, add_params, i32
    )

    # A new shape on the hot path: a miss, a new plan.
    m = 1000
    a, b, c = (torch.zeros(m, dtype=torch.float16) for _ in range(3))
    params = [a.data_ptr(), b.data_ptr(), c.data_ptr(), m, m, m, 0, 0]
    failures += not check(
        recorder, "add, pinned 256, n=1000", lambda: fixed.call(a, b, c), 4, params, i32
    )

    failures += not still_validated(fixed, x, y, z)

    scale = ninetoothed.make(
        lambda s, t, f, B=Symbol("B", constexpr=True): (s.tile((B,)), t.tile((B,)), f),  # noqa: B008
        scale_application,
        (Tensor(1), Tensor(1), Tensor(0)),
    )
    scaled = launcher_of(scale, adapter)
    factor = 2.5
    expected_scale = [
        x.data_ptr(),
        z.data_ptr(),
        n,
        n,
        int.from_bytes(bytearray(ctypes.c_float(factor)), "little"),
        0,
        0,
    ]
    failures += not check(
        recorder, "scale by a float scalar", lambda: scaled.call(x, z, factor, B=1024), 4,
        expected_scale, {2, 3, 4},
    )  # fmt: skip

    failures += not constexpr_scalar_by_value(x, z)
    failures += not unused_placeholder(recorder, adapter, x, z)

    mm = ninetoothed.make(
        matmul.arrangement, matmul.application, matmul.tensors,
        configs=[{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32}],
    )  # fmt: skip
    p, q, r = torch.zeros(128, 96), torch.zeros(96, 64), torch.zeros(128, 64)
    mm_launcher = launcher_of(mm, adapter)
    # a, b, c pointers; sizes and the non-unit strides (unit strides are constexprs)
    expected_mm = [
        p.data_ptr(),
        q.data_ptr(),
        r.data_ptr(),
        128,
        96,
        96,
        96,
        64,
        64,
        128,
        64,
        64,
        0,
        0,
    ]
    failures += not check(
        recorder, "matmul 128x96 @ 96x64, pinned 64x32x32", lambda: mm_launcher.call(p, q, r),
        2 * 2, expected_mm, set(range(3, 12)),
    )  # fmt: skip

    if "--time" in sys.argv:
        timings(tuned, given, fixed, x, y, z)
    return 1 if failures else 0


def still_validated(launcher: Any, x: Any, y: Any, z: Any) -> bool:
    """After the hot path is warm, a wrong call still gets full validation's clear error."""
    from ninetoothed.errors import LaunchError

    launcher.call(x, y, z)
    try:
        launcher.call(x, y.reshape(64, 64), z)
    except LaunchError as error:
        good = "'y'" in str(error) and "dimensions" in str(error)
        print(f"  {'ok' if good else 'WRONG'}  a wrong rank on a warm path: {error}")
        return good
    print("  WRONG  a wrong rank on a warm path launched")
    return False


def constexpr_scalar_by_value(x: Any, z: Any) -> bool:
    """A constexpr scalar is compiled in: a new value must take a new plan, not the last one."""
    import ninetoothed
    from ninetoothed import Symbol, Tensor

    scale = ninetoothed.make(
        lambda s, t, f, B=Symbol("B", constexpr=True): (s.tile((B,)), t.tile((B,)), f),  # noqa: B008
        scale_application,
        (Tensor(1), Tensor(1), Tensor(0, constexpr=True)),
    )
    launcher = launcher_of(scale, __import__("nt_torch.adapter").adapter.TorchAdapter())
    for factor in (2, 3, 2, 3):
        launcher.call(x, z, factor, B=1024)
    good = len(launcher._loaded) == 2 and len(launcher.plans) == 2
    print(
        f"  {'ok' if good else 'WRONG'}  constexpr scalar keyed by value: "
        f"{len(launcher._loaded)} compiled, {len(launcher.plans)} plans for 2 values"
    )
    return good


def masked_scale_application(s: Any, m: Any, flag: Any, t: Any) -> None:
    if flag:
        t = s * m  # noqa: F841
    else:
        t = s  # noqa: F841


def unused_placeholder(recorder: Recorder, adapter: Any, x: Any, z: Any) -> bool:
    """A parameter the call's constexpr switches off, given a meta placeholder: the miss
    launches its stand-in's sizes and the placeholder's pointer (0), the hot path the
    same; switched on, the placeholder is refused on a warm path too."""
    import torch

    import ninetoothed
    from ninetoothed import Symbol, Tensor
    from ninetoothed.errors import LaunchError

    kernel = ninetoothed.make(
        lambda s, m, f, t, B=Symbol("B", constexpr=True): (  # noqa: B008
            s.tile((B,)),
            m.tile((B,)),
            f,
            t.tile((B,)),
        ),
        masked_scale_application,
        (Tensor(1), Tensor(1), Tensor(0, constexpr=True), Tensor(1)),
    )
    launcher = launcher_of(kernel, adapter)
    n = x.shape[0]
    placeholder = torch.empty(n, dtype=torch.float16, device="meta")
    # s, m, t pointers (m: the placeholder's), then the sizes (m's stand-in: 1, a constexpr).
    expected = [x.data_ptr(), 0, z.data_ptr(), n, n, 0, 0]
    good = check(
        recorder, "a meta placeholder, switched off",
        lambda: launcher.call(x, placeholder, False, z, B=1024), 4, expected, {3, 4},
    )  # fmt: skip
    good = good and len(launcher.plans) == 1
    # The plan's guard (none where PyTorch's misbehaves) takes the placeholder.
    guarded = launcher.reads.guard is None or launcher.mru[0][0](x, placeholder, z)
    print(f"  {'ok' if guarded else 'WRONG'}  the plan's guard accepts the placeholder")
    good = good and guarded
    try:
        launcher.call(x, placeholder, True, z, B=1024)
    except LaunchError as error:
        refused = "'m' is on meta" in str(error)
        print(f"  {'ok' if refused else 'WRONG'}  the placeholder switched on: {error}")
        return good and refused
    print("  WRONG  the meta placeholder switched on launched")
    return False


def timings(tuned: Any, given: Any, fixed: Any, x: Any, y: Any, z: Any) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import launch_probe
    from check_launch import per_call

    kernel = launch_probe.compile_kernel(launch_probe.add_kernel, (x, y, z, 4096, 1024))
    direct = launch_probe.DirectLaunch(kernel)
    fn = launch_probe.add_kernel
    rows = {
        "ours, auto-tuned block size": lambda: tuned.call(x, y, z),
        "ours, constexpr given at call": lambda: given.call(x, y, z, B=512),
        "ours, pinned configuration": lambda: fixed.call(x, y, z),
        "@triton.jit usual call": lambda: fn[(4,)](x, y, z, 4096, BLOCK=1024),
        "raw launcher, all precomputed": direct.precomputed(
            4, 0, (x.data_ptr(), y.data_ptr(), z.data_ptr(), 4096, None)
        ),
    }
    rows.update(paddle_rows())
    print("  host µs per call with a driver that does nothing (this CPU):")
    for label, call in rows.items():
        print(f"    {label:34} {per_call(call):6.2f}")


def paddle_rows() -> dict[str, Callable[[], Any]]:
    """Paddle's hot path (its own reads: tuples of shape and strides, dtype, device; no C++
    guard) over the same stand-in launch, on CPU tensors: Paddle's GPU build is not here."""
    try:
        import paddle
    except ImportError:
        return {}
    from support.tutorial import add

    import ninetoothed
    from ninetoothed.runtime.hookspecs import HostReads
    from nt_paddle import fastpath as paddle_fastpath
    from nt_paddle.adapter import PaddleAdapter

    # nt_paddle.fastpath.host_reads's reads, with the stand-in's device and stream.
    stand_in = HostReads(
        pointer_read="{}.data_ptr()",
        key_reads=paddle_fastpath.host_reads(contextlib.nullcontext).key_reads,
        device_of=lambda tensor: 0,
        raw_stream=lambda index: STREAM,
        current_device=None,
        device_guard=lambda index: contextlib.nullcontext(),
        timer=lambda run, count: [float(run() or 1.0) for _ in range(count)],
    )
    adapter = PaddleAdapter()
    tensors = tuple(ninetoothed.Tensor(1) for _ in range(3))
    pinned = ninetoothed.make(
        add.arrangement, add.application, tensors, configs=[{"BLOCK_SIZE": 1024}]
    )
    generated = pinned.generated
    holder: dict[str, Any] = {}

    def miss(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        bound = adapter.bind(generated, args, kwargs)
        holder["launcher"].launch_bound(bound, args, kwargs)

    holder["launcher"] = launcher = generated.fast_launcher(stand_in, miss)
    x, y, z = (paddle.zeros([4096], dtype="float16") for _ in range(3))
    launcher.call(x, y, z)
    return {"Paddle, ours, pinned (CPU tensors)": lambda: launcher.call(x, y, z)}


if __name__ == "__main__":
    if MARK not in os.environ:
        reexec()
    sys.exit(main())
